"""engines/process_group.py: processes started under `detached()` leave the run's process group, so a
terminal's Ctrl-C (SIGINT to the whole group) reaches the run alone, also while the child is still starting
(importing its modules, where a SIGINT used to end it with a KeyboardInterrupt traceback)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = '''
import os, time
time.sleep(float(os.environ["SLOW_IMPORT_S"]))  # the child's start-up: unpickling its target imports this


def target(path):
    time.sleep(0.5)
    with open(path, "w") as handle:
        handle.write(f"{os.getpid()} {os.getpgid(0)}")
'''

PARENT = '''
import multiprocessing, signal, sys, time
from wtb_local.engines.process_group import detached

# Ctrl-C's KeyboardInterrupt, as in a shell's foreground job: a test run started in the background
# inherits SIGINT ignored, and Python then installs no handler of its own
signal.signal(signal.SIGINT, signal.default_int_handler)

if __name__ == "__main__":
    import slow_child
    with detached() as started:
        child = multiprocessing.get_context(sys.argv[2]).Process(target=slow_child.target, args=(sys.argv[1],))
        child.start()
    assert started == [child]
    print("started", child.pid, flush=True)
    try:
        time.sleep(60)
    except KeyboardInterrupt:
        print("parent interrupted", flush=True)
    child.join(60)
    print("child exit", child.exitcode, flush=True)
'''


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_sigint_to_the_group_reaches_the_parent_and_not_the_starting_child(tmp_path: Path, method: str) -> None:
    (tmp_path / "slow_child.py").write_text(CHILD, encoding="utf-8")
    (tmp_path / "parent.py").write_text(PARENT, encoding="utf-8")
    written = tmp_path / "child.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]), "SLOW_IMPORT_S": "2"}
    proc = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"), str(written), method],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)  # its own group, as a shell's job
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("started"), first + proc.communicate()[1]
        child = int(first.split()[1])
        time.sleep(0.5)  # spawn: the child is importing slow_child; fork: it runs its target
        os.killpg(proc.pid, signal.SIGINT)
        rest, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert rest.splitlines() == ["parent interrupted", "child exit 0"], stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert written.read_text(encoding="utf-8") == f"{child} {child}"  # it led a process group of its own
