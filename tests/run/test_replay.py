"""The replay backend: a finished run's raw completions parsed and judged again, offline."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.conftest import RESULT_NAME, invoke, run_files, scripted_args, without_timing
from wtb_local.contract.schema import GenerationRequest
from wtb_local.engines.replay import ReplayBackend, ReplayError, find_result_file, load_recording

pytest.importorskip("transformers", reason="transformers is not installed (pip install -e .[hf])")


def _common(out: Path) -> list[str]:
    return ["--model-name", "tiny", "--dataset", "sample", "--limit", "2", "--max-new-tokens", "8",
            "--out", str(out), "--progress", "none"]


def _replay(source: Path, out: Path, *extra: str) -> list[str]:
    return ["--backend", "replay", "--replay", str(source), *_common(out), *extra]


@pytest.fixture(scope="module")
def recorded(qwen_tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A transformers run of the tiny model on 2 sample sessions; the model copy it used is deleted."""
    root = tmp_path_factory.mktemp("replay")
    model = root / "model"
    shutil.copytree(qwen_tiny_dir, model)
    out = root / "recorded"
    done = invoke(["--backend", "transformers", "--model", str(model), "--batch-size", "8", *_common(out)])
    assert done.exit_code == 0, done.output
    shutil.rmtree(model)  # replaying must not need the weights, the tokenizer or a download
    return out


def _result_file(run_dir: Path) -> Path:
    return run_dir / "result" / "tiny" / RESULT_NAME


def _request(session_id: str, task_idx: int, step: int) -> GenerationRequest:
    return GenerationRequest(request_id=f"{session_id}/{task_idx}/{step}", session_id=session_id,
                             task_idx=task_idx, step=step)


def test_replay_with_the_recorded_parser_gives_the_same_files(recorded: Path, tmp_path: Path) -> None:
    # No --model and no --parser: the recorded run's manifest gives the parser.
    done = invoke(_replay(recorded, tmp_path / "again"), env={"HF_HUB_OFFLINE": "1"})
    assert done.exit_code == 0, done.output
    original, replayed = run_files(recorded, "tiny"), run_files(tmp_path / "again", "tiny")
    assert without_timing(replayed) == without_timing(original)
    assert len(replayed["result"]) == 2 and len(replayed["score"]) == 2

    manifest = json.loads((tmp_path / "again" / "manifest.json").read_text())
    source = _result_file(recorded)
    assert manifest["parser"] == "hermes" and manifest["template"] is None
    assert manifest["config"]["backend"] == "replay"
    assert manifest["config"]["replay_sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert manifest["settings"]["replay"] == str(source)  # the run directory resolved to its result file
    backend = manifest["backend"]
    assert backend["unrecorded"] == 0 and backend["answered"] == backend["recorded_steps"] > 0


def test_replay_with_another_parser_judges_every_task(recorded: Path, tmp_path: Path) -> None:
    model = recorded.parent / "model"  # the recorded run's model, deleted
    assert not model.exists()
    args = _replay(_result_file(recorded), tmp_path / "pythonic", "--model", str(model), "--parser", "pythonic")
    done = invoke(args, env={"HF_HUB_OFFLINE": "1"})
    assert done.exit_code == 0, done.output
    files = run_files(tmp_path / "pythonic", "tiny")
    tasks = [task for row in files["result"] for task in row["result"]]
    assert len(tasks) == 8 and all(t["action_name_label"] in ("correct", "error") for t in tasks)
    assert all(len(row["results"]) == 4 for row in files["score"])
    assert files["metric"]["total_info"]["task"]["total_count"] == 8
    assert json.loads((tmp_path / "pythonic" / "manifest.json").read_text())["parser"] == "pythonic"
    # Every step answered went through the other parser with the recorded raw completion.
    original, replayed = _raws(run_files(recorded, "tiny")["result"]), _raws(files["result"])
    answered = {key: raw for key, (raw, finish) in replayed.items() if finish != "error"}
    assert answered and all(raw == original[key][0] for key, raw in answered.items())


def _raws(rows: list[dict]) -> dict[tuple[str, int, str], tuple[str, str]]:
    return {(row["id"], t["inference_log"]["task_idx"], k): (s["inference_output"]["raw"],
                                                             s["inference_output"]["finish_reason"])
            for row in rows for t in row["result"] for k, s in t["inference_log"].items() if k.startswith("step_")}


def test_a_step_the_recording_lacks_is_an_error_on_that_step(recorded: Path, tmp_path: Path) -> None:
    rows = run_files(recorded, "tiny")["result"]
    del rows[1]["result"][2]["inference_log"]["step_0"]  # a request the recorded run never made
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    done = invoke(_replay(edited, tmp_path / "out", "--parser", "hermes"))
    assert done.exit_code == 0, done.output
    replayed = run_files(tmp_path / "out", "tiny")["result"]
    task = replayed[1]["result"][2]
    step = task["inference_log"]["step_0"]["inference_output"]
    assert step["error_reason"] == "no recorded completion for wild_tool_bench_1/2/0"
    assert step["finish_reason"] == "error" and task["action_name_label"] == "error"
    assert [t["action_name_label"] for t in replayed[0]["result"]] == [
        t["action_name_label"] for t in rows[0]["result"]]  # the other sessions are replayed as recorded
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["backend"]["unrecorded"] == 1


def test_replay_imports_no_engine_and_downloads_nothing(recorded: Path, tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from wtb_local.cli import cli\n"
        "cli(['run', *sys.argv[1:]], standalone_mode=False)\n"
        "print('HEAVY', sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    done = subprocess.run([sys.executable, "-c", code, *_replay(recorded, tmp_path / "r", "--parser", "hermes")],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout
    assert not (tmp_path / "hf").exists()  # nothing was fetched into the (empty) hub cache


def test_malformed_replay_file_is_a_one_line_error(recorded: Path, tmp_path: Path) -> None:
    lines = _result_file(recorded).read_text(encoding="utf-8").splitlines()
    broken = tmp_path / "broken.jsonl"
    # a cut line in the middle (an incomplete last line is what an interrupted write leaves: dropped, as `run`
    # drops it)
    broken.write_text(lines[0] + "\n" + lines[1][:200] + "\n" + lines[1] + "\n", encoding="utf-8")
    done = invoke(_replay(broken, tmp_path / "out"))
    assert done.exit_code == 1
    message = done.output.strip()
    assert f"{broken}:2: not JSON (found " in message and "\n" not in message

    row = json.loads(lines[0])
    row["result"][1]["inference_log"]["step_0"]["inference_output"]["raw"] = 5
    bad_field = tmp_path / "bad_field.jsonl"
    bad_field.write_text(json.dumps(row) + "\n", encoding="utf-8")
    done = invoke(_replay(bad_field, tmp_path / "out2"))
    assert done.exit_code == 1
    assert f"{bad_field}:1: result[1].inference_log.step_0.inference_output.raw: expected a string" in done.output
    assert "\n" not in done.output.strip()


def test_scripted_result_file_is_refused(tmp_path: Path) -> None:
    assert invoke(scripted_args(tmp_path / "scripted", "--limit", "1")).exit_code == 0
    done = invoke(_replay(tmp_path / "scripted", tmp_path / "out"))
    assert done.exit_code == 1
    assert "no step records a raw completion" in done.output and "--backend scripted" in done.output


def test_replaying_into_the_recorded_directory_is_refused(recorded: Path) -> None:
    before = _result_file(recorded).read_bytes()
    done = invoke(_replay(recorded, recorded, "--overwrite"))
    assert done.exit_code == 1 and "pass another --out" in done.output
    assert _result_file(recorded).read_bytes() == before


def test_missing_replay_source_and_option(tmp_path: Path) -> None:
    done = invoke(_replay(tmp_path / "nowhere", tmp_path / "out"))
    assert done.exit_code == 1 and "nowhere: no such file or directory" in done.output
    done = invoke(["--backend", "replay", *_common(tmp_path / "out")])
    assert done.exit_code == 1 and "needs --replay" in done.output


def _row(session_id: str, outputs: list[dict]) -> dict:
    log = {"task_idx": 0, **{f"step_{i}": {"inference_output": out} for i, out in enumerate(outputs)}}
    n = len(outputs)
    return {"id": session_id, "model_name": "m", "result": [{
        "inference_log": log, "latency": [0.5] * n, "input_token_count": [100 + i for i in range(n)],
        "output_token_count": [7] * n}]}


def test_backend_answers_recorded_failed_and_unrecorded_steps(tmp_path: Path) -> None:
    path = tmp_path / RESULT_NAME
    outputs = [
        {"content": "hi", "raw": "<tool_call>{}</tool_call>", "finish_reason": "length"},
        {"content": "", "raw": "", "finish_reason": "error", "error_reason": "prompt too long: 9 tokens > 8"},
    ]
    path.write_text(json.dumps(_row("s", outputs)) + "\n", encoding="utf-8")
    backend = ReplayBackend(path)

    first = asyncio.run(backend.generate(_request("s", 0, 0)))
    assert (first.text, first.finish_reason, first.error) == ("<tool_call>{}</tool_call>", "length", None)
    assert (first.prompt_tokens, first.completion_tokens, first.latency_s) == (100, 7, 0.5)
    failed = asyncio.run(backend.generate(_request("s", 0, 1)))
    assert failed.error == "prompt too long: 9 tokens > 8" and failed.finish_reason == "error"
    missing = asyncio.run(backend.generate(_request("s", 0, 2)))
    assert missing.error == "no recorded completion for s/0/2" and missing.finish_reason == "error"
    assert backend.describe()["answered"] == 2 and backend.describe()["unrecorded"] == 1


def test_loader_rejects_duplicates_bad_counts_and_empty_files(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    line = json.dumps(_row("s", [{"raw": "x", "finish_reason": "stop"}]))
    path.write_text(f"{line}\n\n{line}\n", encoding="utf-8")
    with pytest.raises(ReplayError, match=r"r\.jsonl:3: id: s repeats line 1$"):  # as every reader says
        load_recording(path)
    row = _row("s", [{"raw": "x", "finish_reason": "stop"}])
    row["result"][0]["output_token_count"] = [-1]
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(ReplayError, match=r"r\.jsonl:1: result\[0\]\.output_token_count\[0\]: expected a non-neg"):
        load_recording(path)
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(ReplayError, match="no recorded sessions"):
        load_recording(path)


def test_run_directory_with_several_models_needs_the_name(tmp_path: Path) -> None:
    for name in ("a", "org_b"):
        (tmp_path / "result" / name).mkdir(parents=True)
        (tmp_path / "result" / name / RESULT_NAME).write_text("", encoding="utf-8")
    assert find_result_file(tmp_path, "org/b") == tmp_path / "result" / "org_b" / RESULT_NAME
    with pytest.raises(ReplayError, match=r"several result files \(a, org_b\)"):
        find_result_file(tmp_path, "c")
    with pytest.raises(ReplayError, match="not a run directory"):
        find_result_file(tmp_path / "result")


def test_replay_reads_the_recorded_runs_dataset_unless_one_is_given(tmp_path: Path) -> None:
    """The recorded run's dataset file is the default; `--dataset` still chooses another one."""
    from tests.run.conftest import VECTORS

    dataset = tmp_path / "data" / "sessions.jsonl"
    dataset.parent.mkdir()
    shutil.copyfile(VECTORS / "dataset.jsonl", dataset)
    recorded = tmp_path / "recorded"
    done = invoke(["--backend", "oracle", "--model", "Qwen/Qwen2.5-7B-Instruct", "--dataset", str(dataset),
                   "--out", str(recorded), "--progress", "none"], env={"HF_HUB_OFFLINE": "1"})
    assert done.exit_code == 0, done.output

    again = invoke(["--backend", "replay", "--replay", str(recorded), "--out", str(tmp_path / "again"),
                    "--progress", "none"], env={"HF_HUB_OFFLINE": "1"})
    assert again.exit_code == 0, again.output
    manifest = json.loads((tmp_path / "again" / "manifest.json").read_text())
    original = json.loads((recorded / "manifest.json").read_text())
    assert (manifest["dataset"]["path"], manifest["sources"]["dataset"]) == (str(dataset), f"recorded run ({recorded})")
    assert manifest["config"]["dataset_sha256"] == original["config"]["dataset_sha256"]
    assert manifest["summary"]["task_accuracy"] == original["summary"]["task_accuracy"]

    given = invoke(["--backend", "replay", "--replay", str(recorded), "--dataset", "sample", "--out",
                    str(tmp_path / "given"), "--progress", "none"], env={"HF_HUB_OFFLINE": "1"})
    assert given.exit_code == 0, given.output
    manifest = json.loads((tmp_path / "given" / "manifest.json").read_text())
    assert (manifest["dataset"]["source"], manifest["sources"]["dataset"]) == ("sample", "given (--dataset)")


def test_a_replay_prints_the_recorded_runs_throughput_marked_as_read_back(recorded: Path, tmp_path: Path) -> None:
    """Answering from a file is not a model's speed: the line names the replayed run's own figures."""
    from wtb_local.contract.recorded import recorded_manifest
    from wtb_local.run.loop.throughput import summary_line

    done = invoke(_replay(recorded, tmp_path / "again"), env={"HF_HUB_OFFLINE": "1"})
    assert done.exit_code == 0, done.output
    manifest = recorded_manifest(recorded)
    assert manifest is not None
    block = manifest.summary.throughput
    lines = [line for line in done.stdout.splitlines() if "throughput" in line]
    assert lines == [summary_line(block, "throughput of the replayed run (recorded, not measured now)")]
    assert lines[0].startswith("throughput of the replayed run (recorded, not measured now): ")
