"""Stopping a run on SIGINT (Ctrl-C) or SIGTERM (SLURM preemption, `kill`): promptly, the same way for
every backend, keeping every finished session.

The handler runs between two bytecodes of the main thread, so the flag it sets is seen by the very next
step an episode would start: no new request is built after the signal, even by backends that answer
without ever yielding to the event loop (oracle, scripted, replay). While sessions are running it also
cancels the run's task, so requests already waiting on an engine or a server are abandoned (vLLM aborts
them; a transformers wave in progress finishes first, since a thread cannot be interrupted). Before the
sessions start (dataset, tokenizer, engine set-up) the signal raises KeyboardInterrupt at once. A second
signal raises KeyboardInterrupt, except while the run's record (result file and manifest) is being written:
there it is held until the record is on disk (`holding`), so a second Ctrl-C or a SIGTERM during shutdown
never leaves a manifest that says "running" (docs/reproducibility.md §3).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequested(Exception):
    """Raised by an episode that was about to start a step after a stop signal."""


class RunInterrupted(Exception):
    """The run stopped on a signal; finished sessions are on disk. The message is one line."""

    def __init__(self, message: str, signal_name: str) -> None:
        super().__init__(message)
        self.signal_name = signal_name


class StopSignal:
    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._holding = False
        self._held: str | None = None  # a signal that came while the record was written

    @property
    def requested(self) -> bool:
        return self.signal_name is not None

    def handle(self, signum: int, _frame: Any = None) -> None:
        first = self.signal_name is None
        name = signal.Signals(signum).name
        self.signal_name = self.signal_name or name
        if self._holding:
            self._held = name
            return
        if first and self._task is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)
            return
        raise KeyboardInterrupt(name)

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """While the run's record is written: a signal is held (see `raise_held`), never raised midway."""
        self._holding = True
        try:
            yield
        finally:
            self._holding = False

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
    """Handle SIGINT and SIGTERM with a fresh StopSignal (main thread only; elsewhere a flag nobody sets)."""
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
            signal.signal(sig, handler)
