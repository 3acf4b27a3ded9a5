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
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

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

    @property
    def requested(self) -> bool:
        return self.signal_name is not None

    def handle(self, signum: int, _frame: Any = None) -> None:
        name = signal.Signals(signum).name
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


def current() -> StopSignal | None:
    return _current


@contextlib.contextmanager
def installed() -> Iterator[StopSignal]:
    """Handle SIGINT and SIGTERM with a fresh StopSignal (main thread only; elsewhere a flag nobody sets).
    After a run a signal stopped, a further signal exits with 130 at once instead of the previous handler
    (the process is on its way out: the one line is printed, the record is on disk)."""
    global _current
    stop = StopSignal()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {sig: signal.signal(sig, stop.handle) for sig in STOP_SIGNALS}
    _current = stop
    try:
        yield stop
    finally:
        _current = None
        for sig, handler in previous.items():
            signal.signal(sig, _exit_at_once if stop.requested else handler)


def _exit_at_once(_signum: int, _frame: Any = None) -> None:
    os._exit(INTERRUPTED_EXIT)
