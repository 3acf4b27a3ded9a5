"""What a first-time user runs from the README, and the one-line errors they get when something is off."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from wtb_local.analysis.reports.table import short_label
from wtb_local.cli import cli, main
from wtb_local.contract.resources import sample_dataset_path

FIXTURES = Path(__file__).parents[1] / "fixtures"
VECTORS = FIXTURES / "vectors" / "sessions"
RESULT = "Wild-Tool-Bench_result.jsonl"


def _cli(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, args, env=env)


def _oracle(out: Path, *extra: str) -> Result:
    return _cli(["run", "--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample",
                 "--out", str(out), "--progress", "none", *extra])


def _one_line_error(done: Result, *needles: str) -> str:
    assert done.exit_code != 0, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit), repr(done.exception)
    assert "Traceback" not in done.output
    lines = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and lines[0] == done.stderr.strip().splitlines()[-1], done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# --- run: errors a user meets before anything is generated -------------------------------------------------

def test_text_backend_without_model_is_one_line(tmp_path: Path) -> None:
    done = _cli(["run", "--backend", "transformers", "--dataset", "sample", "--out", str(tmp_path / "r")])
    _one_line_error(done, "--backend transformers needs --model")


def test_missing_local_model_directory_is_one_line(tmp_path: Path) -> None:
    done = _cli(["run", "--model", str(tmp_path / "nowhere"), "--backend", "transformers", "--dataset", "sample",
                 "--out", str(tmp_path / "r")])
    _one_line_error(done, f"--model {tmp_path / 'nowhere'}: cannot load the tokenizer", "no such model directory")


def test_unusable_model_directory_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    empty = tmp_path / "empty-model"
    empty.mkdir()
    done = _cli(["run", "--model", str(empty), "--backend", "transformers", "--dataset", "sample",
                 "--out", str(tmp_path / "r")])
    _one_line_error(done, f"--model {empty}: cannot load the tokenizer")
    rendered = _cli(["render", "--model", str(empty)])
    _one_line_error(rendered)


def test_empty_sessions_list_is_refused_not_every_session(tmp_path: Path) -> None:
    done = _oracle(tmp_path / "r", "--sessions", ",,")
    assert done.exit_code == 2 and "no session id in ',,'" in done.stderr
    assert not (tmp_path / "r").exists()


def test_unknown_dtype_is_refused_before_loading(tmp_path: Path) -> None:
    done = _cli(["run", "--model", "m", "--dtype", "bogus", "--out", str(tmp_path / "r")])
    assert done.exit_code == 2 and "'bogus' is not one of 'auto'" in done.stderr


def test_every_run_option_has_help() -> None:
    from wtb_local.cli.run import run

    bare = [p.name for p in run.params if not getattr(p, "help", None) and p.name != "help"]
    assert bare == []


# --- run: the main job and its outputs ----------------------------------------------------------------------

def test_wtb_model_alone_runs_the_main_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    env = {"WTB_MODEL": "Qwen/Qwen3-8B", "WTB_BACKEND": "oracle", "WTB_DATASET": "sample", "WTB_LIMIT": "1",
           "WTB_OUT": str(tmp_path / "r"), "WTB_PROGRESS": "none"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(SystemExit) as stopped:
        main([])
    assert stopped.value.code in (0, None)
    assert "Table 6" in capsys.readouterr().out
    assert len((tmp_path / "r" / "result" / "Qwen_Qwen3-8B" / RESULT).read_text().splitlines()) == 1


def test_unavailable_release_stops_the_main_job_instead_of_running_the_sample(tmp_path: Path) -> None:
    offline = {"WTB_OFFLINE": "1", "WTB_CACHE_DIR": str(tmp_path / "cache")}  # no release file, no network
    done = _cli(["run", "--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--limit", "1",
                 "--out", str(tmp_path / "r"), "--progress", "none"], env=offline)
    _one_line_error(done, "the release dataset is not cached and could not be fetched",
                    "`python -m wtb_local data fetch`", "`--dataset sample`")
    assert not (tmp_path / "r").exists()  # nothing ran, nothing was written
    sample = _cli(["run", "--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--limit", "1", "--dataset",
                   "sample", "--out", str(tmp_path / "s"), "--progress", "none"], env=offline)
    assert sample.exit_code == 0, sample.output
    note = sample.stdout.strip().splitlines()[-1]
    assert note == ("note: 1 of the release's 256 sessions were scored (dataset: sample); "
                    "the paper's row is over all 256.")


def test_replay_of_a_partial_run_replays_its_sessions_and_explains_failed_requests(tmp_path: Path) -> None:
    recorded = tmp_path / "recorded"
    assert _oracle(recorded, "--limit", "2").exit_code == 0
    replay = ["run", "--backend", "replay", "--replay", str(recorded), "--model", "Qwen/Qwen3-8B",
              "--dataset", "sample", "--progress", "none"]

    done = _cli([*replay, "--out", str(tmp_path / "again")])
    assert done.exit_code == 0, done.output
    rows = (tmp_path / "again" / "result" / "Qwen_Qwen3-8B" / RESULT).read_text().splitlines()
    assert [json.loads(row)["id"] for row in rows] == ["wild_tool_bench_0", "wild_tool_bench_1"]
    assert "replay: 2 of the dataset's 8 sessions are recorded" in done.stderr
    assert "warning:" not in done.stderr and "100.00" in done.stdout

    # Asking for an unrecorded session replays it as request errors, and the run says why.
    other = _cli([*replay, "--out", str(tmp_path / "other"), "--sessions", "0,2"])
    assert other.exit_code == 0, other.output
    warning = [line for line in other.stderr.splitlines() if line.startswith("warning:")]
    # the step it names is the first of the four it counts
    assert warning == [("warning: 4 request(s) failed and were scored as step errors: no recorded completion for "
                       "wild_tool_bench_2/0/0 and 3 more of that kind, with other numbers (4)")]


def test_openai_backend_without_a_server_fails_fast() -> None:
    from wtb_local.engines import get_backend

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = get_backend("openai", base_url=f"http://127.0.0.1:{port}/v1", model="m")  # default retries
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"is not usable: connection error on /models: .*start it first") as exc:
        asyncio.run(backend.start())
    assert time.monotonic() - started < 8.0  # no retry back-off (1 + 2 + 4 + 8 s) before failing
    assert "gave up" not in str(exc.value)


# --- report and score ---------------------------------------------------------------------------------------

def test_report_tells_runs_of_one_model_apart_and_leaves_empty_buckets_blank(tmp_path: Path) -> None:
    assert _oracle(tmp_path / "all").exit_code == 0
    assert _oracle(tmp_path / "s0", "--sessions", "0").exit_code == 0  # session 0 has no Clarify task
    done = _cli(["report", str(tmp_path / "all"), str(tmp_path / "s0"), "--table", "6", "--no-paper"])
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    # each run's row (its ± se, 95% CI and n lines are indented); a label longer than the tables leave it keeps
    # its folder's end, where the two runs differ: 38 characters, what Table 6's cells of 100.00 leave of 120
    # columns (clarify and session are 7 wide)
    ours = {line.split("  ")[0].strip(): line.split() for line in lines[2:]
            if line and not line.startswith(("  ", "note: ", "paired: "))}
    all_label, s0_label = (short_label(f"Qwen_Qwen3-8B ({tmp_path / name})", 38) for name in ("all", "s0"))
    assert max(len(line) for line in lines if not line.startswith(("note: ", "paired: "))) <= 120
    assert set(ours) == {all_label, s0_label} and all_label.endswith("/all)") and s0_label.endswith("/s0)")
    clarify = lines[1].split().index("clarify")
    assert ours[s0_label][1 + clarify] == "-"
    assert ours[all_label][1 + clarify] == "100.00"


def test_score_refuses_a_run_scored_against_another_dataset(tmp_path: Path) -> None:
    assert _oracle(tmp_path / "r", "--limit", "1").exit_code == 0
    result = tmp_path / "r" / "result" / "Qwen_Qwen3-8B" / RESULT
    done = _cli(["score", str(result), "--dataset", str(VECTORS / "dataset.jsonl"), "--out", str(tmp_path / "s")])
    _one_line_error(done, "records dataset sha256", "pass the dataset the run used")
    same = _cli(["score", str(result), "--dataset", "sample", "--out", str(tmp_path / "s")])
    assert same.exit_code == 0, same.output


def test_score_hints_at_the_dataset_when_ids_are_missing(tmp_path: Path) -> None:
    done = _cli(["score", str(VECTORS / "result.jsonl"), "--dataset", "sample", "--out", str(tmp_path / "s")])
    _one_line_error(done, "wild_tool_bench_8 is not in the dataset",
                    "pass --dataset sample or the dataset file the run used")


def test_score_defaults_to_the_release_like_run(tmp_path: Path) -> None:
    offline = {"WTB_OFFLINE": "1", "WTB_CACHE_DIR": str(tmp_path / "cache")}
    done = _cli(["score", str(VECTORS / "result.jsonl"), "--out", str(tmp_path / "s")], env=offline)
    _one_line_error(done, "the release dataset is not cached", "`--dataset sample`")


@pytest.mark.skipif(os.name != "posix", reason="POSIX paths")
def test_score_of_a_file_at_the_filesystem_root_is_not_a_crash(tmp_path: Path) -> None:
    from wtb_local.contract.run_dir import RunDir

    assert RunDir.holding("/result.jsonl") is None  # fewer than 3 parents: no run directory, nothing to check


# --- render and data ----------------------------------------------------------------------------------------

def test_render_of_an_unavailable_release_is_a_one_line_error(tmp_path: Path) -> None:
    offline = {"WTB_OFFLINE": "1", "WTB_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    done = _cli(["render", "--model", str(tmp_path / "no-model"), "--dataset", "release"], env=offline)
    _one_line_error(done, "the release dataset is not cached", "`--dataset sample`")  # read before the model


def test_verify_of_a_file_other_than_the_release_points_at_schema_only() -> None:
    sample = sample_dataset_path()
    done = _cli(["data", "verify", str(sample)])
    _one_line_error(done, "not the pinned release file", "--schema-only")
    assert _cli(["data", "verify", str(sample), "--schema-only"]).exit_code == 0


# --- files a model's output or a user's editor can make -----------------------------------------------------

def test_line_separator_in_a_completion_keeps_the_result_file_readable(tmp_path: Path) -> None:
    # Rows are written with ensure_ascii=False, so U+2028 / U+0085 in a completion land in the file unescaped;
    # readers that split with str.splitlines() cut such a row in two.
    assert _oracle(tmp_path / "r", "--limit", "1").exit_code == 0
    result = tmp_path / "r" / "result" / "Qwen_Qwen3-8B" / RESULT
    row = json.loads(result.read_text(encoding="utf-8"))
    output = row["result"][0]["inference_log"]["step_0"]["inference_output"]
    output["raw"] += "\u2028\u0085"
    result.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    assert "\u2028" in result.read_text(encoding="utf-8")

    scored = _cli(["score", str(result), "--dataset", "sample", "--out", str(tmp_path / "s")])
    assert scored.exit_code == 0, scored.output
    replayed = _cli(["run", "--backend", "replay", "--replay", str(result), "--model", "Qwen/Qwen3-8B",
                     "--dataset", "sample", "--out", str(tmp_path / "again"), "--progress", "none"])
    assert replayed.exit_code == 0, replayed.output

    from wtb_local.benchmark.dataset import read_dataset

    sample = sample_dataset_path()
    first = json.loads(sample.read_text(encoding="utf-8").split("\n")[0])
    first["english_tasks"][0] += "\u2028"
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(json.dumps(first, ensure_ascii=False) + "\n", encoding="utf-8")
    sessions, _ = read_dataset(dataset)
    assert sessions[0].english_tasks[0].endswith("\u2028")


def test_non_utf8_inputs_are_one_line_errors(tmp_path: Path) -> None:
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"raw": "ok"}\n\xff\xfe\n')
    parsed = _cli(["parsers", "parse", str(binary), "--parser", "hermes"])
    _one_line_error(parsed, f"{binary}: not UTF-8 text")
    scripted = _cli(["run", "--backend", "scripted", "--script", str(binary), "--dataset", "sample",
                     "--out", str(tmp_path / "r")])
    _one_line_error(scripted, f"{binary}: not UTF-8 text")


@pytest.mark.parametrize(("extra", "message"), [
    (["--template-kwarg", "bad"], "Error: --template-kwarg 'bad': expected KEY=VALUE"),
    (["--temperature", "-1"], "-1.0 is not in the range x>=0.0"),
    (["--top-p", "7"], "7.0 is not in the range 0.0<x<=1.0"),
])
def test_bad_run_options_are_refused_plainly(tmp_path: Path, extra: list[str], message: str) -> None:
    done = _oracle(tmp_path / "r", *extra)
    assert done.exit_code != 0 and message in done.stderr, done.stderr
    assert "--template-kwarg: --template-kwarg" not in done.stderr


def test_openai_without_base_url_is_refused_before_the_tokenizer_is_fetched(tmp_path: Path) -> None:
    done = _cli(["run", "--model", "nobody/nothing", "--backend", "openai", "--dataset", "sample",
                 "--out", str(tmp_path / "r")], env={"HF_HUB_OFFLINE": "1"})
    _one_line_error(done, "--backend openai needs --base-url")
