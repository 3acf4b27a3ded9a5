"""SIGKILL at 20 seeded random moments, each followed by a rerun of the same command (docs/reliability.md,
"Record faults"). A kill cannot be caught, so the next reader is the honest one: the rerun takes over the
lock the killed process left (one note naming it), drops a partial last line, resumes the finished sessions,
records the killed invocation as `killed`, and ends with the files of an uninterrupted run.

The moments are drawn from sha256 of a fixed string over the reference run's own sessions (its manifest's
throughput wall time), counted from the moment the manifest appears (the folder locked, the record begun)
to a little after the last session is written,
so most land while sessions are being written and the rest in the closing of the record and the scoring.
(A kill before the record is begun: tests/faults/test_record_concurrent.py.)"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.faults.record_cases import (
    RESULT,
    ROOT,
    SESSIONS,
    TIMEOUT_S,
    assert_same_results,
    command,
    complete_rows,
    env,
    make_dataset,
    manifest,
    reference_run,
    resuming,
    run,
    seeded,
)

KILLS = 20


def _killed_at(dataset: Path, out: Path, delay: float) -> int:
    """Start the run and SIGKILL it `delay` seconds after its manifest appears; its pid."""
    proc = subprocess.Popen(command(dataset, out), env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=ROOT)
    deadline = time.monotonic() + TIMEOUT_S
    while not (out / "manifest.json").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=TIMEOUT_S)
    return proc.pid


def _partial_lines(path: Path) -> int:
    if not path.exists():
        return 0
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return len(lines) - len(complete_rows(path))


# 20 runs interrupted and 20 reruns, about 70 s alone; on two busy workers (CI's lanes) about twice that
@pytest.mark.timeout(400)
def test_sigkill_at_20_seeded_moments_then_a_rerun_gives_the_uninterrupted_files(tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path)
    reference = reference_run(dataset, tmp_path / "reference")
    # the reference's sessions took this long, from its first request to its last session written
    span = manifest(reference.out)["invocations"][0]["throughput"]["wall_s"]
    draw = seeded("wtb_local fault suite: SIGKILL moments")
    # from the moment the record is begun to a little after the last session is written
    delays = [draw.random() * 1.2 * span for _ in range(KILLS)]

    landed = {"before the record": 0, "mid-run": 0, "after the sessions": 0}
    identical = 0
    for number, moment in enumerate(delays):
        out = tmp_path / f"kill-{number}"
        pid = _killed_at(dataset, out, moment)
        result = out / RESULT
        safe = len(complete_rows(result)) if result.exists() else 0
        written = (out / "manifest.json").exists()
        landed["before the record" if not written else "mid-run" if safe < SESSIONS else "after the sessions"] += 1
        lock = out / "run.lock"
        left = json.loads(lock.read_text()) if lock.exists() and lock.read_text().strip() else None
        if left is not None:
            assert (left["pid"], left["host"]) == (pid, socket.gethostname())
        partial = _partial_lines(result)
        # a run whose manifest is on disk is resumed, also with no finished session (its record carries on)
        resumed = written

        rerun = run(dataset, out)
        assert rerun.returncode == 0, (moment, rerun.stderr)
        expected = []
        if left is not None:
            expected.append(f"note: {out}: taking over the lock left by pid {pid} on {left['host']} since "
                            f"{left['since']}, which ended without releasing it")
        if resumed and partial:
            expected.append(f"warning: {result}: dropped {partial} incomplete line(s) left by an interrupted run")
        if resumed and safe:  # the line counts the sessions skipped
            expected.append(resuming(out, safe))
        assert rerun.stderr.splitlines() == expected, moment
        assert_same_results(out, reference)
        statuses = [invocation["status"] for invocation in manifest(out)["invocations"]]
        assert statuses[-1] == "complete"
        assert set(statuses[:-1]) <= {"killed", "complete"}
        if resumed and "killed" in statuses:
            assert manifest(out)["invocations"][0]["finished"] is None
        identical += 1
    assert identical == KILLS  # 20/20 identical after resume
    assert landed["mid-run"] >= KILLS // 2, landed
