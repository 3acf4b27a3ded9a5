"""The run directory's lock (wtb_local/contract/lock_file.py; docs/reliability.md, "One run per folder"): one holder
at a time, named in one line; a lock left by a dead process taken over; a reader's probe never refuses a
run; a forked child never keeps the lock; `run.lock` gone once released."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from wtb_local.contract.lock_file import LOCK_NAME, Holder, RunDirLocked, RunLock, live_holder, locked

ROOT = Path(__file__).resolve().parents[2]


def test_a_held_folder_refuses_a_second_holder_naming_the_first(tmp_path: Path) -> None:
    first = RunLock(tmp_path / "run")
    assert first.acquire() is None  # nobody held it before
    recorded = json.loads((tmp_path / "run" / LOCK_NAME).read_text())
    assert (recorded["pid"], recorded["host"]) == (os.getpid(), socket.gethostname())
    with pytest.raises(RunDirLocked) as info:
        RunLock(tmp_path / "run").acquire()
    assert str(info.value) == (f"{tmp_path / 'run'}: another run is writing this folder (pid {os.getpid()} on "
                               f"{recorded['host']} since {recorded['since']}); wait for it to end, or pass "
                               "another --out")
    assert live_holder(tmp_path / "run") == Holder(os.getpid(), recorded["host"], recorded["since"])
    first.release()
    assert not (tmp_path / "run" / LOCK_NAME).exists()
    assert live_holder(tmp_path / "run") is None
    second = RunLock(tmp_path / "run")
    assert second.acquire() is None
    second.release()


def test_a_lock_left_by_a_killed_process_is_taken_over_and_named(tmp_path: Path) -> None:
    code = ("import sys, time; from wtb_local.contract.lock_file import RunLock; RunLock(sys.argv[1]).acquire(); "
            "print('held', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout.readline() == "held\n"  # type: ignore[union-attr]
        held = live_holder(tmp_path)
        assert held is not None and held.pid == proc.pid
        with pytest.raises(RunDirLocked):
            RunLock(tmp_path).acquire()
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert (tmp_path / LOCK_NAME).exists() and live_holder(tmp_path) is None  # the file stays, the lock not
    lock = RunLock(tmp_path)
    assert lock.acquire() == held
    lock.release()


def test_locked_says_the_take_over_in_one_note(tmp_path: Path) -> None:
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": 123, "host": "node7", "since": "2026-01-01T10:00:00+00:00"}))
    notes: list[str] = []

    class Err:
        def write(self, text: str) -> None:
            notes.append(text)

        def flush(self) -> None:
            pass

    with locked(tmp_path, Err()):
        assert live_holder(tmp_path) is not None
    assert "".join(notes) == (f"note: {tmp_path}: taking over the lock left by pid 123 on node7 since "
                              "2026-01-01T10:00:00+00:00, which ended without releasing it\n")
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_readers_probe_never_makes_a_run_refuse_to_start(tmp_path: Path) -> None:
    """`report` and `score` probe with a shared lock for an instant; `acquire` retries through it."""
    stop = threading.Event()
    (tmp_path / LOCK_NAME).write_text("")

    def probe() -> None:
        while not stop.is_set():
            live_holder(tmp_path)

    reader = threading.Thread(target=probe)
    reader.start()
    try:
        for _ in range(50):
            lock = RunLock(tmp_path)
            lock.acquire()
            lock.release()
            (tmp_path / LOCK_NAME).write_text("")  # keep a file there for the reader to probe
    finally:
        stop.set()
        reader.join(timeout=30)


def test_a_forked_child_does_not_keep_the_lock(tmp_path: Path) -> None:
    """An engine process forked by a run closes its copy of the lock: when the run dies, the folder is free
    although the child lives on."""
    code = ("import os, sys, time; from wtb_local.contract.lock_file import RunLock; RunLock(sys.argv[1]).acquire()\n"
            "child = os.fork()\n"
            "if child == 0:\n    os.close(1); os.close(2); time.sleep(60); os._exit(0)\n"
            "print(child, flush=True); os._exit(0)\n")  # the run dies without releasing; its child lives
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    child = int(proc.stdout.strip())
    try:
        assert os.path.exists(f"/proc/{child}")
        assert live_holder(tmp_path) is None
        lock = RunLock(tmp_path)
        assert lock.acquire() is not None  # the dead run's record, taken over
        lock.release()
    finally:
        os.kill(child, 9)
