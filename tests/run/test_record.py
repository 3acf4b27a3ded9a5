"""The run record's own parts (wtb_local/run/record/record.py; docs/reliability.md, "The run record" and
"Signals"): killed invocations marked, what a reader is told about a manifest that says `running`, and the
engine processes a second signal asks to stop."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

from wtb_local.analysis.reports.run_status import status_note
from wtb_local.contract.lock_file import RunLock
from wtb_local.run.record.record import _stop_children, mark_killed


def test_open_invocations_are_marked_killed_and_closed_ones_kept() -> None:
    invocations = [{"started": "a", "finished": "b", "status": "interrupted"}, {"started": "c", "sessions_run": 8}]
    assert mark_killed(invocations) == 1
    assert invocations == [{"started": "a", "finished": "b", "status": "interrupted"},
                           {"started": "c", "sessions_run": 8, "finished": None, "status": "killed"}]


def test_a_running_manifest_is_read_against_the_lock(tmp_path: Path) -> None:
    running = {"status": "running"}
    assert status_note(tmp_path, {"status": "complete"}) is None
    assert status_note(tmp_path, running) == (
        f"{tmp_path}: the manifest says running, but no process holds the run: its process died without closing "
        "the record (killed, out of memory, a lost node or a full disk); rerun the same command to resume")
    lock = RunLock(tmp_path)
    lock.acquire()
    try:
        said = status_note(tmp_path, running)
        assert said is not None and said.startswith(f"{tmp_path} is still running (pid {os.getpid()} on ")
        assert said.endswith("): only the sessions finished so far are counted")
    finally:
        lock.release()


def _sleep() -> None:
    time.sleep(60)


def test_a_second_signal_asks_engine_processes_to_stop() -> None:
    """vLLM starts its engine core with multiprocessing: the process ending at once sends it SIGTERM."""
    child = multiprocessing.get_context("spawn").Process(target=_sleep)
    child.start()
    try:
        _stop_children()
        child.join(timeout=30)
        assert child.exitcode == -15
    finally:
        if child.is_alive():
            child.kill()
            child.join()
