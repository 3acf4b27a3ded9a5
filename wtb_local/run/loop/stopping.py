"""Stopping a run on SIGINT (Ctrl-C) or SIGTERM (SLURM preemption, `kill`): promptly, the same way for
every backend, keeping every finished session.

The handler runs between two bytecodes of the main thread, so the flag it sets is seen by the very next
step an episode would start: no new request is built after the signal, even by backends that answer
without ever yielding to the event loop (oracle, scripted, replay). While sessions are running it also
cancels the run's task, so requests already waiting on an engine or a server are abandoned (vLLM aborts
them; a transformers wave in progress finishes first, since a thread cannot be interrupted). Before the
sessions start (dataset, tokenizer, engine set-up) the signal raises KeyboardInterrupt at once, except
while the run's record is being written (`holding`): there it is held until the record is on disk, then
raised.

A second signal ends the process within two seconds, whatever it is doing: it is never raised inside the
event loop (a KeyboardInterrupt between two of asyncio's own bytecodes could leave a task waiting forever),
but calls `last_resort`, which the run's record sets (record.py: the manifest says `interrupted`, one line,
exit 130). Once a signal has stopped the run, a further one after the run has ended exits with 130 at once
(docs/reliability.md, "Signals").

Once the record is closed complete (or incomplete), nothing is left to stop or lose: a signal from then on,
in the run, in the printing of its tables or in the interpreter's own shutdown, ends the command with the
record's exit code 0 and one line saying where the run is (`after_run`, which `python -m wtb_local run`
installs before the run starts). `run --repeats` runs several in one process: before each next repeat,
`next_run` makes the signal stop again, and one that came between two repeats stops the command there.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequested(Exception):
    """Raised by an episode that was about to start a step after a stop signal."""


class RunInterrupted(Exception):
    """The run stopped on a signal; finished sessions are on disk. The message is one line."""

    def __init__(self, message: str, signal_name: str) -> None:
        super().__init__(message)
        self.signal_name = signal_name


INTERRUPTED_EXIT = 130  # 128 + SIGINT, what a shell reports for Ctrl-C


def exit_now(_signal_name: str) -> None:
    """The last resort before a run has a record: nothing of it is on disk yet, so end at once."""
    sys.stderr.write("interrupted: finished sessions are kept; rerun the same command to resume\n")
    sys.stderr.flush()
    os._exit(INTERRUPTED_EXIT)


class StopSignal:
    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._holding = 0  # nested `holding` blocks
        self._held: str | None = None  # a signal that came while the record was written
        # what a second signal does: end the process (set by the run's record: record.py)
        self.last_resort: Callable[[str], None] = exit_now
        self.recorded: str | None = None  # where the run's record closed complete, once it has
        self.late: str | None = None  # a signal that came after that

    @property
    def requested(self) -> bool:
        return self.signal_name is not None

    def handle(self, signum: int, _frame: Any = None) -> None:
        name = signal.Signals(signum).name
        if self.recorded is not None:  # the run has ended and is on disk: said once the job returns
            self.late = self.late or name
            return
        if self.signal_name is not None:  # the second: the process ends now, the record said so
            self.last_resort(self.signal_name)
            return
        self.signal_name = name
        if self._holding:
            self._held = name
            return
        if self._task is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
            return
        raise KeyboardInterrupt(name)

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """While the run's record is written: a signal is held (see `raise_held`), never raised midway."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1

    def record_closed(self, status: str, run_dir: object) -> None:
        """The record is on disk, closed `status` (complete or incomplete): a signal from now on (or one held
        while it was written) ends the command with exit 0 and the line of `say_recorded`."""
        self.recorded = f"recorded {status} in {run_dir}"
        if self._held is not None:
            self.late, self._held = self._held, None

    def next_run(self) -> str | None:
        """Before the next run of this process (`run --repeats`): the run before it is recorded, and the next
        one is stopped by a signal as the first was. Returns the signal that came after the last run's record
        closed (None if none did): the caller stops there, before the next run starts anything."""
        late, self.recorded, self.late = self.late, None, None
        if late is not None:
            self.signal_name = late  # a further signal ends the process (`last_resort`)
        return late

    def raise_held(self) -> None:
        """KeyboardInterrupt for a signal held while the record was written (the run stops there)."""
        if self._held is not None:
            name, self._held = self._held, None
            raise KeyboardInterrupt(name)

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        """While sessions run: a signal cancels the current task instead of raising."""
        self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
        try:
            yield
        finally:
            self._loop = self._task = None


# The stop signal of the run in progress in this process (None outside `installed`).
_current: StopSignal | None = None
# Where the last run of this process was recorded complete (None before it, or when it did not end so).
_recorded: str | None = None


def current() -> StopSignal | None:
    return _current


@contextlib.contextmanager
def installed() -> Iterator[StopSignal]:
    """Handle SIGINT and SIGTERM with a fresh StopSignal (main thread only; elsewhere a flag nobody sets).
    After a run a signal stopped, a further signal exits with 130 at once instead of the previous handler
    (the process is on its way out: the one line is printed, the record is on disk)."""
    global _current, _recorded
    stop = StopSignal()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    _recorded = None
    previous = {sig: signal.signal(sig, stop.handle) for sig in STOP_SIGNALS}
    _current = stop
    try:
        yield stop
    finally:
        _current = None
        _recorded = stop.recorded
        for sig, handler in previous.items():
            signal.signal(sig, _exit_at_once if stop.requested and stop.recorded is None else handler)
    if stop.late is not None:  # came after the record closed: the job has returned, the lock is released
        say_recorded(stop.late)


def after_run(signum: int, _frame: Any = None) -> None:
    """The handler of `python -m wtb_local run` outside the run itself: after the run's record closed
    complete, the one line and exit 0; before, what the signal did anyway (KeyboardInterrupt for SIGINT,
    the end of the process for SIGTERM)."""
    if _recorded is not None:
        say_recorded(signal.Signals(signum).name)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def end_process(code: Any) -> NoReturn:
    """End `python -m wtb_local run` with exit `code` (a SystemExit's), skipping the interpreter's own
    shutdown once its work is done (non-daemon threads joined, atexit callbacks run, streams flushed): the
    shutdown turns Python's signal handlers back to the system's defaults before its garbage collections walk
    a large run's every object, so a signal in those last moments ended the process with -2 and no line."""
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("text"): the text on stderr, exit 1, as the interpreter does
        sys.stderr.write(f"{code}\n")
        code = 1
    # what the interpreter's shutdown does first: the callbacks of threading's own exit hooks (thread pools
    # telling their workers to end), then every non-daemon thread joined
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    else:
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def say_recorded(signal_name: str) -> None:
    """A signal after the run was recorded complete: the one line, then exit 0 at once (the files are on
    disk; the tables `report` prints are all that is skipped)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    with contextlib.suppress(OSError, ValueError):  # what was printed stays printed
        sys.stdout.flush()
    sys.stderr.write(f"{signal_name} after the run ended: it is {_recorded or 'recorded'}; `python -m wtb_local "
                     "report` on that folder prints its tables\n")
    sys.stderr.flush()
    os._exit(0)


def _exit_at_once(_signum: int, _frame: Any = None) -> None:
    os._exit(INTERRUPTED_EXIT)
