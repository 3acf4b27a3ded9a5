"""Engine processes out of reach of the terminal's Ctrl-C (docs/reliability.md, "Signals").

A terminal sends SIGINT to its whole foreground process group. vLLM's engine processes (the EngineCore and
its workers, started with `multiprocessing`) handle SIGINT themselves: each dies on its own, with
tracebacks ("Worker proc ... died unexpectedly", "EngineCore encountered a fatal error") printed before the
run's own line, and one still importing torch dies with a KeyboardInterrupt traceback. vLLM installs its
handlers itself, so an ignored SIGINT inherited from the run would not last.

While `detached()` is active, every process `multiprocessing` starts from this process (with any start
method) moves itself into a process group of its own before its target runs, so a signal sent to the
run's group reaches the run alone, which stops and shuts the engine down (engines/vllm_engine.py). Its own
children (vLLM's workers) are born in that new group. SIGINT and SIGTERM are blocked in the starting thread
around `start()`: the child inherits the blocked mask through fork and exec, so a signal sent to the old
group before the child has left it stays pending; the child then discards it (setting SIG_IGN drops a
pending signal) and unblocks. The run's own signal is only held for the moment of the fork.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from multiprocessing import resource_tracker
from multiprocessing.context import ForkProcess, ForkServerProcess, SpawnProcess
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

# the processes started inside the innermost `detached()` block, for the run to end them when the engine
# never came up
_started: list[Any] | None = None


class _Detached:
    """Mixed into each start method's Process class (the class travels by name to a spawned child)."""

    def start(self) -> None:
        if getattr(self, "_start_method", None) != "fork":
            # started first: launching it unblocks SIGINT and SIGTERM in this thread (multiprocessing's own
            # guard for the tracker), which would undo the block below for this child
            resource_tracker.ensure_running()
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            super().start()  # type: ignore[misc]
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if _started is not None:
            _started.append(self)

    def run(self) -> None:
        leave_process_group()
        super().run()  # type: ignore[misc]


class DetachedSpawnProcess(_Detached, SpawnProcess):
    pass


class DetachedForkProcess(_Detached, ForkProcess):
    pass


class DetachedForkServerProcess(_Detached, ForkServerProcess):
    pass


_BY_METHOD = {"spawn": DetachedSpawnProcess, "fork": DetachedForkProcess, "forkserver": DetachedForkServerProcess}


def leave_process_group() -> None:
    """In a child started blocked: a process group of its own, stop signals that came meanwhile dropped,
    then the interpreter's default handlers, unblocked (the engine installs its own afterwards)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)  # discards a pending one
    with contextlib.suppress(OSError):  # a session leader cannot move; it is then out of the group already
        os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


@contextlib.contextmanager
def detached() -> Iterator[list[Any]]:
    """Processes started from this process meanwhile leave its process group (see the module's text); the
    list yielded collects them."""
    global _started
    outer, _started = _started, []
    patched = []
    for method, cls in _BY_METHOD.items():
        try:
            context = multiprocessing.get_context(method)
        except ValueError:  # a start method this platform lacks
            continue
        context.Process = cls  # type: ignore[attr-defined]  # the instance's attribute shadows its class's
        patched.append(context)
    try:
        yield _started
    finally:
        _started = outer
        if outer is None:
            for context in patched:
                vars(context).pop("Process", None)


def end_started(started: list[Any], timeout: float = 3.0) -> None:
    """Kill the processes of `started` that still run, with their process groups (an engine whose
    start was interrupted: vLLM holds no handle to shut them down then, and one still loading would go on
    loading after a SIGTERM), and wait up to `timeout` seconds for every process of those groups to end,
    so that their shared memory can be released (leaked_memory.py)."""
    groups = []
    for proc in [proc for proc in started if proc.is_alive()]:
        pid = proc.pid
        try:
            if os.getpgid(pid) == pid:  # it left the run's group: its own children are in its group
                os.killpg(pid, signal.SIGKILL)
                groups.append(pid)
            else:
                proc.kill()
        except (ProcessLookupError, PermissionError):
            pass
        proc.join(timeout)
    deadline = time.monotonic() + timeout
    while any(group_members(pgid) for pgid in groups) and time.monotonic() < deadline:
        time.sleep(0.05)


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group `pgid`, from /proc."""
    members = []
    for stat in os.scandir("/proc"):
        if not stat.name.isdigit():
            continue
        try:
            with open(f"/proc/{stat.name}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:  # exited meanwhile
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.name))
    return members
