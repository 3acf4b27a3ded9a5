"""SIGINT and SIGTERM stop every backend promptly: no new step after the signal, one line, no traceback,
finished sessions kept, exit 130, and the rerun resumes (docs/files.md)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.procs import children
from tests.run.conftest import RESULT_NAME, read_jsonl

ROOT = Path(__file__).resolve().parents[2]


def replicated_sample(copies: int, out: Path) -> Path:
    """The embedded sample `copies` times, ids renumbered (line N holds wild_tool_bench_N)."""
    from wtb_local.contract.resources import sample_dataset_path

    lines = [line for line in sample_dataset_path().read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = []
    for i in range(copies * len(lines)):
        row = json.loads(lines[i % len(lines)])
        row["id"] = f"wild_tool_bench_{i}"
        rows.append(json.dumps(row, ensure_ascii=False))
    out.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return out


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}


def _wait_for(predicate: Any, proc: subprocess.Popen[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"finished before the signal: {proc.communicate()}"
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached")


def _stopped(proc: subprocess.Popen[str], sig: int, result_file: Path, timeout: float,
             group: bool = False) -> tuple[str, float]:
    """Send `sig` to the run (`group`: to its whole process group, as Ctrl-C in a terminal does)."""
    sent = time.monotonic()
    if group:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=timeout)
    elapsed = time.monotonic() - sent
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    # ours is the one line, after transformers' own loading bar, the run's time estimate printed before the
    # engine loads and, with --repeats, the line that starts each repeat
    lines = [line for line in stderr.strip().splitlines()
             if line.strip() and not line.startswith(("Loading weights", "estimate: "))
             and not re.fullmatch(r"repeat \d+ of \d+ \(seed \d+\)", line)]
    name = signal.Signals(sig).name
    assert len(lines) == 1, stderr
    kept = len(read_jsonl(result_file)) if result_file.exists() else 0
    assert lines[0] == (f"interrupted by {name}: {kept} finished session(s) kept in {result_file}; "
                        "rerun the same command to resume")
    return lines[0], elapsed


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_oracle_run_stops_on_a_signal_and_resumes(tmp_path: Path, sig: int) -> None:
    dataset = replicated_sample(64, tmp_path / "big.jsonl")  # 512 sessions: far from done when stopped
    out = tmp_path / "run"
    args = [sys.executable, "-m", "wtb_local", "--model", "Qwen/Qwen3-8B", "--backend", "oracle",
            "--dataset", str(dataset), "--out", str(out), "--progress", "none"]
    result_file = out / "result" / "Qwen_Qwen3-8B" / RESULT_NAME
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        _wait_for(lambda: result_file.exists() and result_file.stat().st_size > 0, proc, 120)
        _, elapsed = _stopped(proc, sig, result_file, 60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert elapsed < 10
    kept = [row["id"] for row in read_jsonl(result_file)]
    assert 1 <= len(kept) < 512
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"

    resumed = subprocess.run(args, check=False, capture_output=True, text=True, env=_env(), timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(kept)} finished session(s) skipped, {512 - len(kept)} to run" in resumed.stderr
    assert [row["id"] for row in read_jsonl(result_file)][: len(kept)] == kept
    assert len(read_jsonl(result_file)) == 512
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_run_with_render_workers_stops_when_its_whole_process_group_is_signalled(tmp_path: Path,
                                                                                  sig: int) -> None:
    """Ctrl-C (and Slurm's SIGTERM) reach the render workers too (docs/runner-speed.md §6): the run still
    stops with its one line and exit 130, no worker prints a traceback, and none outlives the run."""
    from tests.helpers import build_tiny_tokenizer

    templates = ROOT / "tests" / "fixtures" / "rendering" / "chat_templates.json"
    template = json.loads(templates.read_text(encoding="utf-8"))["Qwen/Qwen3-0.6B"]["chat_template"]
    model = build_tiny_tokenizer(tmp_path / "tokenizer", template, special_tokens=["<tool_call>", "</tool_call>"],
                                 vocab_size=1024, max_position_embeddings=1 << 17)
    dataset = replicated_sample(32, tmp_path / "big.jsonl")  # 256 sessions: far from done when stopped
    out = tmp_path / "run"
    args = [sys.executable, "-m", "wtb_local", "--model", str(model), "--backend", "instant", "--parser", "hermes",
            "--dataset", str(dataset), "--out", str(out), "--progress", "none", "--render-workers", "2"]
    result_file = out / "result" / "tokenizer" / RESULT_NAME
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                            start_new_session=True)
    try:
        _wait_for(lambda: result_file.exists() and result_file.stat().st_size > 0, proc, 240)
        workers = children(proc.pid)
        assert len(workers) == 2
        _, elapsed = _stopped(proc, sig, result_file, 60, group=True)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert elapsed < 10
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers), "a render worker outlived the run"
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"


def test_transformers_run_stops_within_a_wave(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    out = tmp_path / "run"
    # One prompt per wave and long generations: the sample takes minutes, one wave well under a second.
    args = [sys.executable, "-m", "wtb_local", "--model", str(qwen_tiny_dir), "--backend", "transformers",
            "--model-name", "tiny", "--dataset", "sample", "--batch-size", "1", "--max-new-tokens", "64",
            "--out", str(out), "--progress", "none"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        _wait_for(lambda: (out / "manifest.json").exists(), proc, 240)
        time.sleep(3)  # the engine is loaded and generating
        _, elapsed = _stopped(proc, signal.SIGTERM, out / "result" / "tiny" / RESULT_NAME, 120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert elapsed < 15
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"


class _CountingBackend:
    """Answers every step with a plain text reply at once (like the oracle: never waits)."""

    name = "counting"
    produces_text = False
    needs_prompt = False
    needs_gold = False
    step_synchronous = False

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, request: Any) -> Any:
        from wtb_local.contract.schema import Completion

        self.calls += 1
        return Completion(request_id=request.request_id, reply={"content": "done", "tool_calls": None})


@pytest.mark.parametrize("scheduling", ["continuous", "waves"])
def test_no_step_is_started_after_the_stop_flag(tmp_path: Path, scheduling: str) -> None:
    from wtb_local.benchmark.dataset import load_dataset
    from wtb_local.benchmark.evaluator.episode import session_episodes, session_result
    from wtb_local.contract.schema import SamplingConfig
    from wtb_local.run.loop.loop import SessionRunner
    from wtb_local.run.loop.progress import ProgressStats, make_progress
    from wtb_local.run.loop.steps import StepDriver
    from wtb_local.run.loop.stopping import StopRequested
    from wtb_local.run.record.store import ResultStore

    backend = _CountingBackend()
    driver = StepDriver(backend, sampling=SamplingConfig())  # type: ignore[arg-type]
    store = ResultStore(tmp_path / "result.jsonl")
    store.open(fresh=True)
    sessions = load_dataset("sample", quiet=True)
    with make_progress("none", ProgressStats(len(sessions), 32, 0), sys.stderr) as progress:
        runner = SessionRunner(driver, store, model_name="m", progress=progress, episodes_for=session_episodes,
                               session_row=session_result, should_stop=lambda: backend.calls >= 5)
        with pytest.raises(BaseExceptionGroup if scheduling == "continuous" else StopRequested) as info:
            asyncio.run(runner.run(sessions, scheduling))
    if scheduling == "continuous":
        assert info.group_contains(StopRequested)
    assert backend.calls == 5 if scheduling == "continuous" else backend.calls == 32  # one wave: every episode


# Stand-ins for the slow parts of a shutdown, loaded before the CLI: each touches $WTB_TEST_MARK when it
# starts (the test sends its second signal then) and blocks the main thread for a while, as vLLM's engine
# shutdown (a synchronous call) and an fsync on a slow disk do.
_SLOW_SHUTDOWN = {
    "engine shutdown": (
        "import os, pathlib, time\n"
        "from wtb_local.engines.oracle import OracleBackend\n"
        "async def close(self):\n"
        "    pathlib.Path(os.environ['WTB_TEST_MARK']).touch(); time.sleep(3)\n"
        "OracleBackend.close = close\n"),
    "record written": (
        "import os, pathlib, time\n"
        "from wtb_local.run.record.store import ResultStore\n"
        "_finalize = ResultStore.finalize\n"
        "def finalize(self):\n"
        "    pathlib.Path(os.environ['WTB_TEST_MARK']).touch(); time.sleep(3); return _finalize(self)\n"
        "ResultStore.finalize = finalize\n"),
}


@pytest.mark.parametrize(("slow", "second"), [("record written", signal.SIGINT), ("record written", signal.SIGTERM),
                                              ("engine shutdown", signal.SIGTERM)],
                         ids=["record-SIGINT", "record-SIGTERM", "shutdown-SIGTERM"])
def test_a_second_signal_during_shutdown_leaves_the_run_interrupted_and_its_invocation_kept(
        tmp_path: Path, slow: str, second: int) -> None:
    """Ctrl-C, then a second Ctrl-C (or SLURM's SIGTERM) while the run shuts down (its record being written,
    or a slow engine shutdown): the process ends within 2 s of the second signal with the run's own line, the
    manifest says "interrupted", never "running", and the invocation that wrote the sessions stays in it
    through the resumed rerun (docs/reproducibility.md §3, docs/reliability.md "Signals")."""
    dataset = replicated_sample(64, tmp_path / "big.jsonl")
    out = tmp_path / "run"
    mark = tmp_path / "shutting-down"
    args = ["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", str(dataset), "--out", str(out),
            "--progress", "none"]
    code = _SLOW_SHUTDOWN[slow] + "import sys\nfrom wtb_local.cli import main\nmain(sys.argv[1:])\n"
    result_file = out / "result" / "Qwen_Qwen3-8B" / RESULT_NAME
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**_env(), "WTB_TEST_MARK": str(mark)})
    try:
        _wait_for(lambda: result_file.exists() and result_file.stat().st_size > 0, proc, 120)
        proc.send_signal(signal.SIGINT)
        _wait_for(mark.exists, proc, 60)
        proc.send_signal(second)
        sent = time.monotonic()
        _, stderr = proc.communicate(timeout=60)
        elapsed = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert elapsed < 2, elapsed  # the slow part (3 s) is not waited for
    kept = [row["id"] for row in read_jsonl(result_file)]
    assert 1 <= len(kept) < 512
    assert stderr.strip().splitlines() == [(f"interrupted by SIGINT: {len(kept)} finished session(s) kept in "
                                           f"{result_file}; rerun the same command to resume")]
    assert not (out / "run.lock").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    [stopped] = manifest["invocations"]
    # sessions_run: the sessions this invocation wrote (the kept ones); sessions_scheduled: what it set out to run
    assert (stopped["sessions_run"], stopped["sessions_scheduled"]) == (len(kept), 512)
    assert stopped["finished"] and stopped["throughput"]["steps"] > 0

    resumed = subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, capture_output=True, text=True,
                             env=_env(), timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["invocations"][0] == stopped
    assert manifest["invocations"][1]["sessions_run"] == manifest["invocations"][1]["sessions_scheduled"] \
        == 512 - len(kept)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_in_a_later_repeat_stops_the_repeats_and_the_rerun_runs_the_rest(qwen_tiny_dir: Path,
                                                                                   tmp_path: Path, sig: int) -> None:
    """`run --repeats 3` runs its repeats in one process: a signal in the second stops it as it stops one run
    (its sessions kept, exit 130, one line naming that repeat's file; the first repeat's record had closed,
    which used to turn the signal into a note once all three had run), and the rerun resumes it and runs the
    third."""
    from tests.run.fake_openai import fake_openai_server

    dataset = replicated_sample(8, tmp_path / "big.jsonl")  # 64 sessions a repeat
    out = tmp_path / "run"
    with fake_openai_server(str(qwen_tiny_dir), vary_by_seed=True) as server:  # repeats need a sampling backend
        args = [sys.executable, "-m", "wtb_local", "--model", str(qwen_tiny_dir), "--backend", "openai",
                "--base-url", server.base_url, "--dataset", str(dataset), "--temperature", "0.7", "--repeats", "3",
                "--out", str(out), "--progress", "none"]
        second = out / "repeats" / "1" / "result" / "qwen" / RESULT_NAME
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        try:
            _wait_for(lambda: second.exists() and second.stat().st_size > 0, proc, 240)
            _stopped(proc, sig, second, 60)
        finally:
            if proc.poll() is None:
                proc.kill()
        statuses = [json.loads((out / "repeats" / r / "manifest.json").read_text())["status"] for r in "01"]
        assert statuses == ["complete", "interrupted"]
        assert not (out / "repeats" / "2").exists() and not (out / "repeats.json").exists()
        kept = len(read_jsonl(second))

        resumed = subprocess.run(args, check=False, capture_output=True, text=True, env=_env(), timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming {out / 'repeats' / '0'}: 64 finished session(s) skipped, 0 to run" in resumed.stderr
    assert f"resuming {out / 'repeats' / '1'}: {kept} finished session(s) skipped, {64 - kept} to run" in \
        resumed.stderr
    assert [json.loads((out / "repeats" / r / "manifest.json").read_text())["status"] for r in "012"] == \
        ["complete"] * 3
    assert len(json.loads((out / "repeats.json").read_text())["seeds"]) == 3
