"""An engine process that exits without unlinking its shared memory: after it is gone, `release_leaked`
unlinks the segment and the resource tracker prints no "leaked shared_memory objects" warning at exit, while
a segment a live process still maps is left alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD_LEAKS = """
import multiprocessing as mp, os, sys
from multiprocessing import shared_memory

def leak(conn):
    segment = shared_memory.SharedMemory(create=True, size=4096)  # registered with the parent's tracker
    conn.send(segment.name)
    os._exit(0)  # as an engine process ended at shutdown: no finalizer unlinks it

if __name__ == "__main__":
    from wtb_local.engines.leaked_memory import SHM_DIR, release_leaked, segments
    held = shared_memory.SharedMemory(create=True, size=4096)  # mapped by this live process: kept
    before = segments() - {held.name.lstrip("/")}
    ctx = mp.get_context("spawn")
    here, there = ctx.Pipe()
    child = ctx.Process(target=leak, args=(there,))
    child.start()
    name = here.recv().lstrip("/")
    child.join(60)
    assert (SHM_DIR / name).exists()
    released = release_leaked(before) if sys.argv[1] == "release" else []
    print("released", released == [name], "held kept", (SHM_DIR / held.name.lstrip("/")).exists())
    held.close()
    held.unlink()
"""


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="POSIX shared memory in /dev/shm (Linux)")
def test_a_leaked_segment_is_released_and_the_exit_warning_is_gone(tmp_path: Path) -> None:
    script = tmp_path / "leak.py"
    script.write_text(CHILD_LEAKS)
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    leaked = subprocess.run([sys.executable, str(script), "keep"], capture_output=True, text=True, env=env,
                            timeout=120, check=True)
    assert "There appear to be 1 leaked shared_memory objects" in leaked.stderr  # what a user saw
    done = subprocess.run([sys.executable, str(script), "release"], capture_output=True, text=True, env=env,
                          timeout=120, check=True)
    assert done.stdout.strip() == "released True held kept True"
    assert "leaked" not in done.stderr, done.stderr
