"""Two runs into one folder (docs/reliability.md, "One run per folder" and "Record faults"): the second
stops at once with one line naming the first (pid, host, since when) and touches nothing; `report` and
`score` read a run in progress and say so, `rescore` and `merge` wait for it; a lock left by a killed run
is taken over with one note; and the shards of one run, each in its own folder, run side by side.

The first run is paused (SIGSTOP) once it holds its folder, so the second always meets a live holder,
however loaded the machine; SIGCONT lets it finish, with the files of an uninterrupted run."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.faults.record_cases import (
    METRIC,
    RESULT,
    ROOT,
    SCORE,
    SESSIONS,
    TIMEOUT_S,
    Reference,
    assert_closed,
    assert_same_results,
    command,
    complete_rows,
    env,
    make_dataset,
    manifest,
    reference_run,
    resuming,
    run,
)
from tests.run.conftest import read_jsonl, without_timing


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Reference]:
    folder = tmp_path_factory.mktemp("concurrent")
    dataset = make_dataset(folder)
    return dataset, reference_run(dataset, folder / "reference")


def _holding(dataset: Path, out: Path, *extra: str, sessions: bool = False
             ) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """A run started and waited for until it holds `out` (and, with `sessions`, has written a session): the
    process and what its lock file says."""
    proc = subprocess.Popen(command(dataset, out, *extra), env=env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    lock = out / "run.lock"
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it was seen holding"
        text = lock.read_text() if lock.exists() else ""
        if text.strip() and (not sessions or ((out / RESULT).exists() and complete_rows(out / RESULT))):
            return proc, json.loads(text)
        time.sleep(0.002)


def _wtb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], env=env(), capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False, cwd=ROOT)


def test_a_second_run_into_a_held_folder_stops_at_once_naming_the_holder(workload: tuple[Path, Reference],
                                                                          tmp_path: Path) -> None:
    dataset, reference = workload
    out = tmp_path / "run"
    first, holder = _holding(dataset, out, sessions=True)
    try:
        first.send_signal(signal.SIGSTOP)  # a live holder for as long as the checks take
        assert (holder["pid"], holder["host"]) == (first.pid, socket.gethostname())
        described = f"pid {first.pid} on {holder['host']} since {holder['since']}"
        before = {p.relative_to(out): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}

        second = run(dataset, out)
        assert second.returncode == 1
        assert second.stderr.splitlines() == [(f"Error: {out}: another run is writing this folder ({described}); "
                                               "wait for it to end, or pass another --out")]
        assert {p.relative_to(out): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before

        # readers: report and score show what is on disk and say the run is in progress
        still = f"{out} is still running ({described}): only the sessions finished so far are counted"
        shown = _wtb("report", str(out))
        assert shown.returncode == 0, shown.stderr
        assert f"note: Qwen_Qwen3-8B: {still}" in shown.stdout.splitlines()
        scored = _wtb("score", str(out))
        assert scored.returncode == 0, scored.stderr
        assert f"note: {still}" in scored.stdout.splitlines()
        kept = len(complete_rows(out / RESULT))
        assert scored.stderr.splitlines() == [f"note: {kept} of {SESSIONS} sessions in {out / RESULT}",
                                              (f"note: {out} is being written by a run: no score files written "
                                               "(--out DIR writes them elsewhere)")]
        assert not (out / SCORE).exists()
        # writers wait for it
        rescored = _wtb("rescore", str(out), "--checker", "lenient")
        assert rescored.returncode == 1
        assert rescored.stderr.splitlines() == [(f"Error: {out}: another run is writing this folder ({described}); "
                                                 "rescore it when that run has ended")]
        assert {p.relative_to(out): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before
    finally:
        first.send_signal(signal.SIGCONT)
        try:
            _, stderr = first.communicate(timeout=TIMEOUT_S)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
    assert first.returncode == 0, stderr
    assert_same_results(out, reference)
    [invocation] = manifest(out)["invocations"]  # the refused run recorded nothing
    assert invocation["status"] == "complete" and invocation["finished"]


def test_a_lock_left_by_a_killed_run_is_taken_over_with_one_note(workload: tuple[Path, Reference],
                                                                tmp_path: Path) -> None:
    dataset, reference = workload
    out = tmp_path / "run"
    first, holder = _holding(dataset, out)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=TIMEOUT_S)
    assert json.loads((out / "run.lock").read_text()) == holder  # the file stays, the lock is gone
    kept = len(read_jsonl(out / RESULT)) if (out / RESULT).exists() else 0

    again = run(dataset, out)
    assert again.returncode == 0, again.stderr
    note = (f"note: {out}: taking over the lock left by pid {first.pid} on {holder['host']} since "
            f"{holder['since']}, which ended without releasing it")
    assert again.stderr.splitlines() == [note] + ([resuming(out, kept)] if kept else [])
    assert_same_results(out, reference)


def test_the_shards_of_one_run_run_side_by_side_and_merge_waits_for_them(workload: tuple[Path, Reference],
                                                                         tmp_path: Path) -> None:
    """Each shard locks its own folder (`shards/<I>-of-<N>/`), so array tasks never refuse each other;
    `merge` names a shard that is still running, then joins them into the files of a one-process run."""
    dataset, reference = workload
    out = tmp_path / "run"
    procs = [subprocess.Popen(command(dataset, out, "--shard", f"{index}/2"), env=env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT) for index in range(2)]
    try:
        lock = out / "shards" / "0-of-2" / "run.lock"
        deadline = time.monotonic() + TIMEOUT_S
        while not (lock.exists() and lock.read_text().strip() and
                   json.loads(lock.read_text())["pid"] == procs[0].pid):
            assert procs[0].poll() is None and time.monotonic() < deadline
            time.sleep(0.002)
        procs[0].send_signal(signal.SIGSTOP)
        since = json.loads(lock.read_text())["since"]
        merged = _wtb("merge", str(out))
        assert merged.returncode == 1
        assert f"0-of-2: still running (pid {procs[0].pid} on {socket.gethostname()} since {since})" in merged.stderr
    finally:
        procs[0].send_signal(signal.SIGCONT)
        for proc in procs:
            try:
                proc.communicate(timeout=TIMEOUT_S)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    assert [proc.returncode for proc in procs] == [0, 0], [proc.stderr for proc in procs]
    for index in range(2):
        assert_closed(out / "shards" / f"{index}-of-2", "complete")
    merged = _wtb("merge", str(out))
    assert merged.returncode == 0, merged.stderr
    for name in (RESULT, SCORE):
        assert [without_timing(r) for r in read_jsonl(out / name)] == reference.rows[name]
    assert json.loads((out / METRIC).read_text()) == json.loads((reference.out / METRIC).read_text())
    assert_closed(out, "complete")
