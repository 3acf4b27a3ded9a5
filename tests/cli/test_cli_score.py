"""The `score` command: files written, summary printed, one-line errors, env twins, no heavy imports."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from wtb_local.cli import cli

SESSIONS = Path(__file__).parents[1] / "fixtures" / "vectors" / "sessions"
DATASET = str(SESSIONS / "dataset.jsonl")
RESULT = str(SESSIONS / "result.jsonl")


def _invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def _expected_metric() -> dict:
    return json.loads((SESSIONS / "metric.json").read_text(encoding="utf-8"))


def test_score_writes_both_files_and_prints_the_summary(tmp_path: Path) -> None:
    done = _invoke("score", RESULT, "--dataset", DATASET, "--out", str(tmp_path))
    assert done.exit_code == 0, done.output
    folder = tmp_path
    assert (
        json.loads((folder / "Wild-Tool-Bench_metric.json").read_text(encoding="utf-8")) == _expected_metric()
    )
    scored = [json.loads(line) for line in (folder / "Wild-Tool-Bench_score.jsonl").read_text().splitlines()]
    expected = [json.loads(line) for line in (SESSIONS / "score.jsonl").read_text().splitlines()]
    # the reference's fields unchanged; wtb_local adds each task's error category after them
    categories = [task.pop("error_category") for row in scored for task in row["results"]]
    assert scored == expected
    assert len(categories) == 256 and categories.count(None) == 136
    assert "Table 6" in done.output and "Table 7" in done.output
    # task 53.12 %, session 4.69 % (136/256, 3/64)
    assert "53.12" in done.output and "4.69" in done.output


def test_score_file_rescored_gives_the_same_metric(tmp_path: Path) -> None:
    assert _invoke("score", RESULT, "--dataset", DATASET, "--out", str(tmp_path / "a")).exit_code == 0
    score_path = tmp_path / "a" / "Wild-Tool-Bench_score.jsonl"
    done = _invoke("score", str(score_path), "--dataset", DATASET, "--out", str(tmp_path / "b"),
                   "--model-name", "scripted")  # score rows carry no model name; the folder is "a"
    assert done.exit_code == 0, done.output
    again = json.loads((tmp_path / "b" / "Wild-Tool-Bench_metric.json").read_text())
    assert again == _expected_metric()


def test_env_twins_and_model_name(tmp_path: Path) -> None:
    env = {"WTB_DATASET": DATASET, "WTB_OUT": str(tmp_path), "WTB_MODEL_NAME": "Qwen/Qwen3-8B"}
    done = _invoke("score", RESULT, env=env)
    assert done.exit_code == 0, done.output
    metric = json.loads((tmp_path / "Wild-Tool-Bench_metric.json").read_text())
    assert metric["model_name"] == "Qwen_Qwen3-8B"
    assert "paper: Qwen3-8B" in done.output  # the paper's row for the same model


def test_every_option_has_an_explicit_env_twin() -> None:
    from wtb_local.cli.score import score

    for param in score.params:
        if param.param_type_name == "option":
            assert param.envvar and str(param.envvar).startswith("WTB_"), param.name


def _rows() -> list[dict]:
    return [json.loads(line) for line in (SESSIONS / "result.jsonl").read_text(encoding="utf-8").splitlines()]


def _cases() -> list[tuple[str, list, str]]:
    rows = _rows()[:3]
    missing = copy.deepcopy(rows)
    del missing[2]["result"][0]["is_optimal"]
    unknown = copy.deepcopy(rows)
    unknown[0]["id"] = "wild_tool_bench_64"
    fewer = copy.deepcopy(rows)
    fewer[1]["result"] = fewer[1]["result"][:2]
    return [
        # in the middle: not what an interrupted write leaves (an incomplete last line is dropped with a note)
        ("malformed", [json.dumps(rows[0]), '{"id": "wild_tool_bench_1", ', json.dumps(rows[2])],
         ":2: not JSON (found "),
        ("missing_field", missing, ":3: wild_tool_bench_2: result[0].is_optimal: missing"),
        ("unknown_id", unknown, ":1: id: wild_tool_bench_64 is not in the dataset"),
        ("fewer_tasks", fewer, ":2: wild_tool_bench_1: result: 2 tasks, the dataset has 4"),
    ]


@pytest.mark.parametrize(("case", "rows", "message"), _cases(), ids=[c[0] for c in _cases()])
def test_bad_inputs_give_one_line_errors(tmp_path: Path, case: str, rows: list, message: str) -> None:
    path = tmp_path / "res.jsonl"
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    done = _invoke("score", str(path), "--dataset", DATASET, "--out", str(tmp_path / "out"))
    assert done.exit_code == 1
    lines = done.output.strip().splitlines()
    assert len(lines) == 1, done.output
    assert lines[0].startswith(f"Error: {path}") and message in lines[0]
    assert not (tmp_path / "out").exists()


def test_arguments_given_as_objects_are_scored(tmp_path: Path) -> None:
    rows = _rows()
    for row in rows:
        for task in row["result"]:
            for key, step in task["inference_log"].items():
                calls = step["inference_output"].get("tool_calls") if key.startswith("step_") else None
                for call in calls or []:
                    try:
                        call["function"]["arguments"] = json.loads(call["function"]["arguments"])
                    except (ValueError, KeyError):
                        pass
    path = tmp_path / "objects.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    done = _invoke("score", str(path), "--dataset", DATASET, "--out", str(tmp_path))
    assert done.exit_code == 0, done.output
    metric = json.loads((tmp_path / "Wild-Tool-Bench_metric.json").read_text())
    # Re-serialized text can differ from the model's own (spacing), never the verdict of valid JSON.
    assert metric["total_info"] == _expected_metric()["total_info"]


def test_missing_inputs(tmp_path: Path) -> None:
    done = _invoke("score", str(tmp_path / "absent.jsonl"), "--dataset", DATASET, "--out", str(tmp_path))
    assert done.exit_code == 1 and len(done.output.strip().splitlines()) == 1
    assert done.output.strip() == (f"Error: {tmp_path / 'absent.jsonl'}: no such file or directory "
                                   "(give a run directory or a result file)")
    done = _invoke(
        "score", RESULT, "--dataset", str(tmp_path / "absent_dataset.jsonl"), "--out", str(tmp_path)
    )
    assert done.exit_code == 1 and len(done.output.strip().splitlines()) == 1


def test_score_does_not_import_heavy_libraries(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from wtb_local.cli import cli\n"
        f"cli.main(args=['score', {RESULT!r}, '--dataset', {DATASET!r}, '--out', {str(tmp_path)!r}],"
        " standalone_mode=False)\n"
        "heavy = sorted(m for m in ('torch', 'vllm', 'transformers') if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout
    assert (tmp_path / "Wild-Tool-Bench_metric.json").exists()
