"""scripts/real_model_figures.py's tables, from finished run directories (`--tables-from`, `--replay`): two
oracle runs of the sample stand in for the real model's (no engine, seconds)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "real_model_figures.py"


def _script() -> object:
    spec = importlib.util.spec_from_file_location("real_model_figures", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("figures")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in ("vllm", "transformers"):
        done = subprocess.run([sys.executable, "-m", "wtb_local", "--model", "Qwen/Qwen2.5-7B-Instruct", "--backend",
                               "oracle", "--dataset", "sample", "--limit", "2", "--out", str(out / name),
                               "--progress", "none"], capture_output=True, text=True, env=env, timeout=600,
                              check=False)
        assert done.returncode == 0, done.stderr
    return out


def test_tables_from_finished_runs_with_a_replay(runs: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--tables-from", str(runs), "--replay", "--json",
                           str(runs / "figures.json")], capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    rows = [line.split(" | ") for line in done.stdout.splitlines() if line.startswith(("| vllm ", "| transf"))]
    deviations = "0" if _script().records_deviations() else "not recorded"  # type: ignore[attr-defined]
    walls = [row.pop(9) for row in rows]  # wall seconds: measured
    assert all(wall.isdigit() for wall in walls)
    assert rows == [
        ["| vllm", "in-process vLLM engine", "8", "100.00", "100.00", "0 of 17", deviations, "0", "0.0", "—",
         "None |"],
        ["| transformers", "transformers generate (waves of 16)", "8", "100.00", "100.00", "0 of 17", deviations,
         "0", "0.0", "17/17", "None |"]]
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
