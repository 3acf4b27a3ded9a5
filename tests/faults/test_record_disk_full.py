"""A disk that fills up mid-run (docs/reliability.md, "Record faults"): the run stops with one line naming
the file and how many finished sessions are safe on disk, the manifest says `failed` (or, when it cannot be
written either, the line says so and `report` calls the run dead, not running), the lock is released, and
the rerun on a disk with room ends with the files of an uninterrupted run.

ENOSPC comes from tests/faults/record_disk/sitecustomize.py on the subprocess's PYTHONPATH: the result
file's first fsyncs succeed, then every fsync of the named files fails and cuts the file back to what was
fsynced (making a real small file system needs root, which CI may not have)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults.record_cases import (
    RESULT,
    ROOT,
    SESSIONS,
    Reference,
    assert_closed,
    assert_same_results,
    complete_rows,
    env,
    make_dataset,
    manifest,
    reference_run,
    resuming,
    run,
)

INJECT = str(ROOT / "tests" / "faults" / "record_disk")
FULL = "[Errno 28] No space left on device"


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Reference]:
    folder = tmp_path_factory.mktemp("disk-full")
    dataset = make_dataset(folder)
    return dataset, reference_run(dataset, folder / "reference")


def _full_run(dataset: Path, out: Path, files: str) -> subprocess.CompletedProcess[str]:
    return run(dataset, out, PYTHONPATH=f"{ROOT}:{INJECT}", WTB_FAULT_FULL_AFTER="3", WTB_FAULT_FULL_FILES=files)


def test_a_full_disk_under_the_result_file_stops_the_run_with_one_line_and_the_rerun_completes(
        workload: tuple[Path, Reference], tmp_path: Path) -> None:
    dataset, reference = workload
    out = tmp_path / "run"
    stopped = _full_run(dataset, out, "Wild-Tool-Bench_result.jsonl")
    assert stopped.returncode == 1, stopped.stderr
    result = out / RESULT
    safe = len(complete_rows(result))
    assert 1 <= safe < SESSIONS
    assert stopped.stderr.splitlines() == [
        (f"Error: disk full: writing {result} failed ({FULL}), run stopped; {safe} finished session(s) are safe "
         "on disk: free space and rerun the same command to resume")]
    recorded = manifest(out)
    assert recorded["status"] == "failed"
    assert recorded["invocations"][-1]["status"] == "failed"
    assert recorded["invocations"][-1]["failure"] == f"writing {result} failed ({FULL})"
    assert_closed(out, "failed")

    rerun = run(dataset, out)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stderr.splitlines() == [resuming(out, safe)]
    assert_same_results(out, reference)


def test_a_full_disk_that_refuses_the_manifest_too_is_said_and_the_next_reader_is_told(
        workload: tuple[Path, Reference], tmp_path: Path) -> None:
    dataset, reference = workload
    out = tmp_path / "run"
    stopped = _full_run(dataset, out, "Wild-Tool-Bench_result.jsonl,manifest.json")
    assert stopped.returncode == 1, stopped.stderr
    result = out / RESULT
    safe = len(complete_rows(result))
    assert 1 <= safe < SESSIONS
    assert stopped.stderr.splitlines() == [
        (f"Error: disk full: writing {result} failed ({FULL}), run stopped; {safe} finished session(s) are safe "
         f"on disk; the manifest {out / 'manifest.json'} could not be written either ({FULL}; it still says "
         "running): free space and rerun the same command to resume")]
    assert manifest(out)["status"] == "running"  # all the disk allowed: the line above says so
    assert not (out / "manifest.json.tmp").exists() and not (out / "run.lock").exists()

    # the next reader: no process holds the run, so it is not running
    shown = subprocess.run([sys.executable, "-m", "wtb_local", "report", str(out)], env=env(), capture_output=True,
                           text=True, timeout=120, check=False, cwd=ROOT)
    assert shown.returncode == 0, shown.stderr
    assert (f"note: {manifest(out)['config']['model_name'].replace('/', '_')}: {out}: the manifest says running, "
            "but no process holds the run: its process died without closing the record (killed, out of memory, "
            "a lost node or a full disk); rerun the same command to resume") in shown.stdout.splitlines()

    rerun = run(dataset, out)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stderr.splitlines() == [resuming(out, safe)]
    assert_same_results(out, reference)
    first, second = manifest(out)["invocations"]
    # what it set out to run is on disk; how many it wrote never was (the manifest write failed)
    assert (first["status"], first["finished"], first["sessions_scheduled"]) == ("killed", None, SESSIONS)
    assert "sessions_run" not in first
    assert (second["status"], second["sessions_run"]) == ("complete", SESSIONS - safe)
