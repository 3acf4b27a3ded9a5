"""scripts/gpu_throughput.py --tiny: the GPU check's whole code path on the CPU build (dummy weights of a
tiny Qwen3 shape whose vocabulary is larger than its tokenizer's, like Qwen3-8B's; synthetic sessions of
the release's shape; in-process runner, one request at a time, the vLLM server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tiers import needs_vllm

# The GPU check script on its tiny CPU shape: engine starts and timed runs, minutes on 2 shared cores.
pytestmark = [pytest.mark.vllm, needs_vllm, pytest.mark.timeout(900)]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_throughput.py"


def test_gpu_check_runs_tiny_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "gpu_throughput.json"
    env = {**os.environ, "WTB_CACHE_DIR": str(tmp_path / "cache"), "OUT": str(tmp_path / "out")}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--out-json", str(out)], env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert json.loads((tmp_path / "out" / "gpu_throughput.json").read_text(encoding="utf-8")) == report
    assert report["shape"] == "tiny (CPU smoke run)"
    assert report["engine"]["load_format"] == "dummy"
    workload = report["workload"]
    assert workload["dataset"] == "synthetic: the embedded sample x 1 (release file absent)"
    assert (workload["sessions"], workload["tasks"], workload["one_at_a_time_sessions"]) == (4, 16, 1)
    modes = {m["mode"]: m for m in report["modes"]}
    assert list(modes) == ["continuous", "one-at-a-time", "server"]
    assert (modes["continuous"]["tasks"], modes["one-at-a-time"]["tasks"], modes["server"]["tasks"]) == (16, 4, 16)
    for mode in modes.values():  # the runner's ceiling next to the engine (docs/runner-speed.md §4)
        assert mode["runner_ceiling_steps_per_s"] >= mode["steps_per_s"] > 0
        assert mode["runner_headroom"] == round(mode["runner_ceiling_steps_per_s"] / mode["steps_per_s"], 2)
        assert mode["paced_by"] == ("runner" if mode["runner_busy_share"] >= 0.8 else "engine")
    one = modes["one-at-a-time"]
    assert one["extrapolated_wall_s"] == round(16 / one["tasks_per_s"], 1)
    assert one["note"] == "measured on 4 of 16 tasks; extrapolated_wall_s is the full workload at this rate"
    for mode in modes.values():  # the engine and the server both report prefix-cache hits
        assert 0 < mode["prefix_cache_hit_rate"] < 1 and mode["steps"] > mode["tasks"], mode
    assert report["short_completions"] == 0  # every step generated exactly its gold length
    assert set(report["versions"]) >= {"vllm", "torch", "cuda"}
    assert report["gpu_memory"]["peak_used_mib"] is None  # no GPU here
    goals = report["goals"]
    assert goals["continuous_wall_s"] == modes["continuous"]["wall_s"]
    assert goals["x_one_at_a_time"] == round(modes["continuous"]["tasks_per_s"] / one["tasks_per_s"], 1)
    assert report["engine_start_s"] > 0 and report["server_start_s"] > 0
    assert proc.stdout.endswith(out.read_text(encoding="utf-8"))  # the JSON also ends stdout (after vLLM's logs)
