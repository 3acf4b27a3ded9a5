"""scripts/real_model_figures.py's tables, from finished run directories (`--tables-from`, `--replay`): two
oracle runs of the sample stand in for the real model's (no engine, seconds). The expected rows are computed
here from the run directories, never by the script under test."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "real_model_figures.py"
RESULT = "Wild-Tool-Bench_result.jsonl"


def _script() -> object:
    spec = importlib.util.spec_from_file_location("real_model_figures", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two sessions as "vllm", one as "transformers", and one transformers reply written again with a trailing
    newline (the same reading and verdict, another text): the rows differ in tasks, steps and agreement."""
    out = tmp_path_factory.mktemp("figures")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name, limit in (("vllm", "2"), ("transformers", "1")):
        done = subprocess.run([sys.executable, "-m", "wtb_local", "--model", "Qwen/Qwen2.5-7B-Instruct", "--backend",
                               "oracle", "--dataset", "sample", "--limit", limit, "--out", str(out / name),
                               "--progress", "none"], capture_output=True, text=True, env=env, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stderr
    (result,) = (out / "transformers").glob("result/*/" + RESULT)
    rows = [json.loads(line) for line in result.read_text(encoding="utf-8").splitlines()]
    rows[0]["result"][0]["inference_log"]["step_0"]["inference_output"]["raw"] += "\n"
    result.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return out


def _steps(run_dir: Path) -> dict[tuple[str, int, int], dict[str, Any]]:
    (result,) = run_dir.glob("result/*/" + RESULT)
    steps = {}
    for line in result.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for task in row["result"]:
            log = task["inference_log"]
            steps.update({(row["id"], log["task_idx"], key): step for key, step in log.items() if key.startswith("step_")})
    return steps


def _expected_row(runs: Path, name: str, what: str) -> list[str]:
    """The row computed from the run directories by this test alone: the scorer's metric file, the step
    records (the replay's for format deviations) and, against the "vllm" run, the steps with the same input
    whose text and calls are the same."""
    run_dir = runs / name
    (metric_file,) = run_dir.glob("score/*/Wild-Tool-Bench_metric.json")
    total = json.loads(metric_file.read_text(encoding="utf-8"))["total_info"]
    steps = _steps(run_dir)
    outputs = [step["inference_output"] for step in steps.values()]
    deviations = sum(1 for step in _steps(runs / "replay" / name).values()
                     if step["inference_output"].get("format_deviation"))
    tok_s = json.loads((run_dir / "manifest.json").read_text())["summary"]["throughput"]["generated_tokens_per_s"]
    same = "—"
    if name != "vllm":
        reference = _steps(runs / "vllm")
        shared = [key for key in steps if key in reference
                  and reference[key]["inference_input"] == steps[key]["inference_input"]]
        equal = [key for key in shared if (reference[key]["inference_output"]["raw"],
                                           reference[key]["inference_output"].get("tool_calls"))
                 == (steps[key]["inference_output"]["raw"], steps[key]["inference_output"].get("tool_calls"))]
        same = f"{len(equal)}/{len(shared)}"
    return [f"| {name}", what, str(total["task"]["total_count"]),
            f"{100 * total['task']['correct_count'] / total['task']['total_count']:.2f}",
            f"{100 * total['session']['correct_count'] / total['session']['total_count']:.2f}",
            f"{sum(1 for o in outputs if o.get('parse_errors'))} of {len(steps)}", str(deviations),
            str(sum(1 for o in outputs if o["finish_reason"] == "length")), f"{tok_s:.1f}", same, "None |"]


def test_tables_from_finished_runs_with_a_replay(runs: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--tables-from", str(runs), "--replay", "--json",
                           str(runs / "figures.json")], capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    rows = [line.split(" | ") for line in done.stdout.splitlines() if line.startswith(("| vllm ", "| transf"))]
    walls = [row.pop(9) for row in rows]  # wall seconds: measured
    assert all(wall.isdigit() for wall in walls)
    expected = [_expected_row(runs, "vllm", "in-process vLLM engine"),
                _expected_row(runs, "transformers", "transformers generate (waves of 16)")]
    assert rows == expected
    # the sample's sizes, as a check on the computation above: 2 sessions are 8 tasks in 17 steps, the first
    # session 4 tasks in 8, all of them shared with the "vllm" run and one reply written otherwise
    assert [(row[2], row[5], row[9]) for row in rows] == [("8", "0 of 17", "—"), ("4", "0 of 8", "7/8")]
    assert sorted(p.name for p in (runs / "replay").iterdir()) == ["transformers", "vllm"]


def test_format_deviations_are_counted_per_kind_from_the_step_records() -> None:
    script = _script()

    def step(record: object) -> dict[str, object]:
        output: dict[str, object] = {"raw": "x", "finish_reason": "stop"}
        if record is not None:
            output["format_deviation"] = record
        return {"inference_output": output}

    rows = [{"id": "s", "result": [{"inference_log": {
        "task_idx": 0, "step_0": step({"kind": "fenced_json", "calls": 1}),
        "step_1": step({"kind": "bare_json", "calls": 2}), "step_2": step(None)}}, {"inference_log": {
        "task_idx": 1, "step_0": step({"kind": "fenced_json", "calls": 1})}}]}]
    assert script.deviation_counts(rows) == {"bare_json": 1, "fenced_json": 2}  # type: ignore[attr-defined]
