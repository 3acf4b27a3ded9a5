"""Run progress: a rich bar on a terminal, plain periodic lines otherwise (logs, CI), or nothing.

Shows sessions and tasks done, the running task accuracy of the finished sessions (fully scored, names
and arguments, when the judge is available; after a resume it is named as this invocation's, the sessions
finished before are not re-judged here), generated tokens per second once any were measured, the failed
requests of the finished sessions (counted from their written lines, so the result file holds the same
number) and the time left. While requests are at the engine and none has come back for `quiet_after`
seconds the line says what the engine is doing: the engine's own account when it gives one
(`Backend.activity`: the transformers wave's prefill and decode step), else the requests in flight and the
prompt tokens submitted to it (docs/runner-speed.md §8).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Self, TextIO


class ProgressStats:
    """Counters shared by every progress display. Sessions and tasks count on one base, the whole run: a
    resumed run starts with its finished sessions and their tasks done (the time left is estimated from
    this invocation's own rate)."""

    def __init__(self, total_sessions: int, total_tasks: int, skipped_sessions: int = 0,
                 skipped_tasks: int = 0) -> None:
        self.total_sessions = total_sessions
        self.total_tasks = total_tasks
        self.sessions_done = skipped_sessions
        self.tasks_done = skipped_tasks
        self.tasks_this_run = 0
        self.tasks_scored = 0
        self.tasks_correct = 0
        self.requests = 0
        # failed requests (wtb_local/contract/faults.py) of the sessions written: the number the result file holds
        self.failed_requests = 0
        self.generated_tokens = 0
        self.prompt_tokens = 0
        self.resumed_tasks = skipped_tasks  # finished before this invocation: not in the accuracy
        self.in_flight = 0  # requests at the engine now
        self.in_flight_prompt_tokens = 0  # their prompt tokens
        self.activity: Callable[[], str | None] | None = None  # the engine's own account (Backend.activity)
        self.quiet_after = 5.0  # seconds without a reply before the line says what the engine is doing
        self.started = time.monotonic()
        self.last_reply: float | None = None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def tokens_per_s(self) -> float:
        return self.generated_tokens / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def accuracy(self) -> float | None:
        return self.tasks_correct / self.tasks_scored if self.tasks_scored else None

    def eta_s(self) -> float | None:
        remaining = self.total_tasks - self.tasks_done
        if self.tasks_this_run == 0:
            return None
        return remaining * self.elapsed / self.tasks_this_run

    def accuracy_text(self) -> str:
        if self.accuracy is None:
            return "acc -"
        acc = f"acc {100 * self.accuracy:.2f}%"
        # after a resume the finished sessions are not re-judged: name whose tasks the figure covers
        return f"{acc} (this invocation's {self.tasks_scored} tasks)" if self.resumed_tasks else acc

    def rate_text(self) -> str:
        """Generated tokens per second, only once some were generated: a zero rate says nothing."""
        return f"  {self.tokens_per_s:.1f} tok/s" if self.generated_tokens else ""

    def engine_text(self) -> str:
        """What the engine is doing, when requests are at it and none has come back for `quiet_after` s."""
        if self.in_flight <= 0:
            return ""
        waiting = time.monotonic() - (self.last_reply if self.last_reply is not None else self.started)
        if waiting < self.quiet_after:
            return ""
        said = None
        if self.activity is not None:
            try:
                said = self.activity()
            except Exception:  # noqa: BLE001 - a display must not stop the run; the plain account stands
                said = None
        if said:
            return f"  engine: {said}"
        return (f"  engine: {self.in_flight} request(s) in flight, prefilling {self.in_flight_prompt_tokens:,} "
                f"prompt tok or generating, no reply for {waiting:.0f}s")

    def line(self) -> str:
        eta = self.eta_s()
        eta_text = "-" if eta is None else f"{eta:.0f}s"
        return (f"sessions {self.sessions_done}/{self.total_sessions}"
                f"  tasks {self.tasks_done}/{self.total_tasks}"
                f"  {self.accuracy_text()}{self.rate_text()}  requests {self.requests}"
                f" (failed {self.failed_requests})  elapsed {self.elapsed:.0f}s  eta {eta_text}"
                f"{self.engine_text()}")


class Progress:
    """Base display: counts only (mode `none`)."""

    def __init__(self, stats: ProgressStats) -> None:
        self.stats = stats

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sent(self, prompt_tokens: int) -> None:
        """A request went to the engine."""
        self.stats.in_flight += 1
        self.stats.in_flight_prompt_tokens += prompt_tokens

    def returned(self, prompt_tokens: int) -> None:
        """A request sent came back (answered, failed or cancelled)."""
        self.stats.in_flight -= 1
        self.stats.in_flight_prompt_tokens -= prompt_tokens
        self.stats.last_reply = time.monotonic()

    def step(self, prompt_tokens: int, completion_tokens: int) -> None:
        self.stats.requests += 1
        self.stats.prompt_tokens += prompt_tokens
        self.stats.generated_tokens += completion_tokens
        self.refresh()

    def task_done(self) -> None:
        self.stats.tasks_done += 1
        self.stats.tasks_this_run += 1
        self.refresh()

    def session_done(self, correct_tasks: int, scored_tasks: int, failed_requests: int = 0) -> None:
        """A session's line is durable; `failed_requests`: its steps whose request got no reply."""
        self.stats.sessions_done += 1
        self.stats.failed_requests += failed_requests
        self.stats.tasks_correct += correct_tasks
        self.stats.tasks_scored += scored_tasks
        self.refresh()

    def refresh(self) -> None:
        """Redraw if the display wants to."""

    def close(self) -> None:
        """Final redraw."""


class PlainProgress(Progress):
    """A line every `interval` seconds while steps finish, one at the end, and one every `heartbeat` seconds
    while none does (a CPU engine's first wave of prompts takes minutes: the run says it is still going)."""

    def __init__(self, stats: ProgressStats, stream: TextIO | None = None, interval: float = 10.0,
                 heartbeat: float | None = 30.0) -> None:
        super().__init__(stats)
        self.stream = stream or sys.stderr
        self.interval = interval
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._beat: threading.Thread | None = None
        if heartbeat:
            self._beat = threading.Thread(target=self._heartbeat, args=(heartbeat,), daemon=True)
            self._beat.start()

    def _print(self) -> None:
        with self._lock:
            self._last = time.monotonic()
            print(self.stats.line(), file=self.stream, flush=True)

    def _heartbeat(self, every: float) -> None:
        while not self._closed.wait(min(every, 1.0)):
            if time.monotonic() - self._last >= every:
                self._print()

    def refresh(self) -> None:
        if time.monotonic() - self._last >= self.interval:
            self._print()

    def close(self) -> None:
        self._closed.set()
        if self._beat is not None:
            self._beat.join()
        self._print()


class RichProgress(Progress):
    """Two bars (sessions, tasks) with accuracy, tokens/s and time left."""

    def __init__(self, stats: ProgressStats, stream: TextIO | None = None) -> None:
        super().__init__(stats)
        from rich.console import Console  # deferred: start-up
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichBar  # deferred: start-up

        self._bar = RichBar(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
            console=Console(file=stream or sys.stderr), transient=False,
        )
        self._sessions = self._bar.add_task("sessions", total=stats.total_sessions,
                                            completed=stats.sessions_done, info="")
        self._tasks = self._bar.add_task("tasks", total=stats.total_tasks, completed=stats.tasks_done, info="")
        self._bar.start()
        # redrawn every second also while no step finishes, so the engine's account shows (engine_text)
        self._closed = threading.Event()
        self._tick = threading.Thread(target=self._ticking, daemon=True)
        self._tick.start()

    def _ticking(self) -> None:
        while not self._closed.wait(1.0):
            self.refresh()

    def refresh(self) -> None:
        s = self.stats
        eta = s.eta_s()
        self._bar.update(self._sessions, completed=s.sessions_done, info=s.accuracy_text())
        self._bar.update(self._tasks, completed=s.tasks_done,
                         info=f"{s.rate_text().strip()}  eta {'-' if eta is None else f'{eta:.0f}s'}"
                              f"{s.engine_text()}")

    def close(self) -> None:
        self._closed.set()
        self._tick.join()
        self.refresh()
        self._bar.stop()


class Loading:
    """What the run does before its first request (loading the engine), with the elapsed time: a line at the
    start, one every `interval` seconds from a thread (the engine's start blocks the event loop), and one
    when it is done; on a terminal (`rich`) one status line that counts the seconds. Mode `none`: silent."""

    def __init__(self, mode: str, what: str, stream: TextIO | None = None, interval: float = 30.0) -> None:
        self.stream = stream or sys.stderr
        self.mode = _display_mode(mode, self.stream)
        self.what = what
        self.interval = interval
        self.started = time.monotonic()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._status: object = None

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def __enter__(self) -> Self:
        self.started = time.monotonic()
        if self.mode == "none":
            return self
        if self.mode == "rich":
            from rich.console import Console  # deferred: start-up (rich only on a terminal)

            status = Console(file=self.stream).status(f"{self.what}  0s")
            status.start()
            self._status = status
            self._thread = threading.Thread(target=self._tick_rich, daemon=True)
        else:
            print(f"{self.what} ...", file=self.stream, flush=True)
            self._thread = threading.Thread(target=self._tick_plain, daemon=True)
        self._thread.start()
        return self

    def _tick_plain(self) -> None:
        while not self._done.wait(self.interval):
            print(f"{self.what}  elapsed {self.elapsed():.0f}s", file=self.stream, flush=True)

    def _tick_rich(self) -> None:
        while not self._done.wait(1.0):
            self._status.update(f"{self.what}  {self.elapsed():.0f}s")  # type: ignore[attr-defined]

    def __exit__(self, kind: object, *exc: object) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        if self._status is not None:
            self._status.stop()  # type: ignore[attr-defined]
        if self.mode != "none" and kind is None:
            print(f"{self.what}: done in {self.elapsed():.0f}s", file=self.stream, flush=True)


def _display_mode(mode: str, target: TextIO) -> str:
    if mode == "auto":
        return "rich" if target.isatty() else "plain"
    return mode


def make_progress(mode: str, stats: ProgressStats, stream: TextIO | None = None) -> Progress:
    """`auto` = rich on a terminal, plain lines otherwise."""
    target = stream or sys.stderr
    mode = _display_mode(mode, target)
    if mode == "rich":
        return RichProgress(stats, target)
    if mode == "plain":
        return PlainProgress(stats, target)
    if mode == "none":
        return Progress(stats)
    raise ValueError(f"unknown progress mode {mode!r}; choose auto, rich, plain or none")
