"""A real full disk (docs/reliability.md, "Damaged records"): a 300 KiB tmpfs as `--out` fills mid-run, so
the result file ends in a partial line and the manifest cannot be written either. The line counts as safe
exactly the sessions the rerun keeps, `score` and `report` read the run with the note `run` gives for the
partial line, and the rerun on the same folder, given room, ends with an uninterrupted run's files.

Mounting a tmpfs needs root: skipped elsewhere (tests/run/test_damaged_record.py simulates the partial
line and the cut write without it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults.record_cases import (
    RESULT,
    ROOT,
    Reference,
    assert_same_results,
    complete_rows,
    env,
    make_dataset,
    reference_run,
    resuming,
    run,
)

pytestmark = pytest.mark.faults
FULL = "[Errno 28] No space left on device"


@pytest.fixture
def tmpfs(tmp_path: Path) -> Path:
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mount)], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"mount -t tmpfs failed: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def _wtb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], env=env(), capture_output=True, text=True,
                          timeout=300, check=False, cwd=ROOT)


def test_a_real_full_disk_counts_the_kept_sessions_and_every_reader_reads_past_the_partial_line(
        tmpfs: Path, tmp_path: Path) -> None:
    dataset = make_dataset(tmp_path)
    reference: Reference = reference_run(dataset, tmp_path / "reference")
    out = tmpfs / "run"
    stopped = run(dataset, out)
    assert stopped.returncode == 1, stopped.stderr
    result = out / RESULT
    text = result.read_text(encoding="utf-8")
    assert not text.endswith("\n")  # the disk took part of a line
    kept = len(complete_rows(result))
    assert stopped.stderr.splitlines() == [
        (f"Error: disk full: writing {result} failed ({FULL}), run stopped; {kept} finished session(s) are safe on "
         f"disk; the manifest {out / 'manifest.json'} could not be written either ({FULL}; it still says "
         "running): free space and rerun the same command to resume")]

    note = f"{result}: dropped 1 incomplete line(s) left by an interrupted run"
    scored = _wtb("score", str(out), "--out", str(tmp_path / "scored"))
    assert scored.returncode == 0, scored.stderr
    assert f"note: {note}" in scored.stderr.splitlines()
    reported = _wtb("report", str(out))
    assert reported.returncode == 0, reported.stderr
    assert f"note: Qwen_Qwen3-8B: {note}" in reported.stdout.splitlines()

    subprocess.run(["mount", "-o", "remount,size=64m", str(tmpfs)], check=True)
    rerun = run(dataset, out)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stderr.splitlines()[:2] == [f"warning: {note}", resuming(out, kept)]
    assert_same_results(out, reference)
