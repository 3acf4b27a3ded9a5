"""The runner loop: every (session, task) episode in flight at once.

Continuous scheduling (default): each episode is its own coroutine; its next prompt goes to the engine
as soon as its previous reply is parsed and judged, so no episode waits for unrelated ones and an engine
with continuous batching (vLLM) always has every ready request. Waves: all unfinished episodes send
their current step together and the next wave starts when all replies are in — for backends whose
batches must not depend on arrival timing (transformers' padded `generate`, whose sampling is seeded per
batch). A session's result line is handed to the store's writer thread as soon as its four tasks are
done, and the session counts as finished (progress, `on_finished`) once that line is fsynced; `run`
returns after the last one is (docs/runner-speed.md §3).

A callback that raises (making the episodes, building a row, counting its labels, the progress display, a
caller's `on_finished`) or a row the writer could not write stops the run at once: the error is kept, the
run's task is cancelled, and `run` raises it (a `LoopError` or the store's `RecordError`), so nothing is
left waiting for a session that will never be reported (docs/reliability.md, "No hangs").

An error of wtb_local's own code on a step (faults.InternalError) stops only its session: its other tasks
take no further step, no row is written for it, and `broken` holds what the rerun needs (the error, where
it happened, the completions the session got); the other sessions run on (docs/reliability.md, "Internal
errors").
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wtb_local.contract.errors import RecordError, one_line
from wtb_local.contract.faults import InternalError, failed_requests
from wtb_local.contract.messages import SessionResult
from wtb_local.run.errors import LoopError
from wtb_local.run.loop.progress import Progress
from wtb_local.run.loop.steps import StepDriver
from wtb_local.run.loop.stopping import StopRequested
from wtb_local.run.record.store import ResultStore

SCHEDULING_MODES = ("auto", "continuous", "waves")


def resolve_scheduling(mode: str, backend: Any) -> str:
    if mode not in SCHEDULING_MODES:
        raise ValueError(f"unknown scheduling {mode!r}; choose one of {', '.join(SCHEDULING_MODES)}")
    if mode != "auto":
        return mode
    # backends whose batches form from what is pending at once say so (see module docstring)
    capabilities = getattr(type(backend), "capabilities", None)
    if getattr(backend, "step_synchronous", False) or getattr(capabilities, "step_synchronous", False):
        return "waves"
    return "continuous"


@dataclass
class _SessionState:
    session: Any
    episodes: list[Any]
    remaining: int = field(init=False)
    broken: InternalError | None = None  # the first internal error of one of its steps

    def __post_init__(self) -> None:
        self.remaining = len(self.episodes)


class SessionRunner:
    """Runs sessions' episodes through a `StepDriver`, writing each finished session to a store."""

    def __init__(self, driver: StepDriver, store: ResultStore, *, model_name: str,
                 progress: Progress, episodes_for: Callable[[Any], list[Any]],
                 session_row: Callable[[Any, Sequence[Any], str], SessionResult],
                 label_counts: Callable[[SessionResult, Any], tuple[int, int]] | None = None,
                 should_stop: Callable[[], bool] = lambda: False,
                 on_finished: Callable[[str], None] | None = None) -> None:
        self.driver = driver
        self.store = store
        self.model_name = model_name
        self.progress = progress
        self.episodes_for = episodes_for
        self.session_row = session_row
        self.label_counts = label_counts
        self.should_stop = should_stop  # checked before every step: no new work after a stop signal
        self.on_finished = on_finished  # called with a session id once its line is durable
        # the engine's own account of what it is doing, for the progress line while no reply comes
        self.progress.stats.activity = getattr(getattr(driver, "backend", None), "activity", None)
        self._unwritten = 0  # sessions handed to the writer, not yet durable
        self._written = asyncio.Event()  # a fresh one per run (run()); an Event binds no loop until used
        self._task: asyncio.Task[Any] | None = None
        self._failure: BaseException | None = None  # a callback's or the writer's error: the run stops
        self._cancelled = False  # whether `_fail` cancelled the run's task
        self.internal_errors: list[InternalError] = []  # every one, in the order met
        self.broken: list[dict[str, Any]] = []  # per session stopped by one: its error and completions

    async def run(self, sessions: Sequence[Any], scheduling: str) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._failure = None
        self._cancelled = False
        self._written = asyncio.Event()
        self._written.set()
        # Everything alive now (the engine, tokenizer, dataset) and the episodes made next live through the
        # run: leave them out of the garbage collector's full passes, each of which otherwise walks all of it
        # (a third of a second per pass with transformers loaded: docs/runner-speed.md §2), also while the
        # episodes are being made. Given back afterwards.
        gc.freeze()
        try:
            try:
                states = [_SessionState(s, self._episodes(s)) for s in sessions]
                gc.freeze()
                for state in states:  # sessions without tasks are finished at once
                    if state.remaining == 0:
                        self._finish(state)
                if scheduling == "waves":
                    await self._run_waves(states)
                else:
                    # A TaskGroup cancels the other episodes when one fails (a backend that raises is broken).
                    async with asyncio.TaskGroup() as group:
                        for state in states:
                            for episode in state.episodes:
                                group.create_task(self._run_episode(state, episode))
                await self._written.wait()  # every finished session is durable and reported
            except (asyncio.CancelledError, Exception) as exc:
                if self._failure is None:
                    raise
                if self._cancelled and self._task is not None:
                    self._task.uncancel()  # the cancellation was ours (`_fail`), not the caller's
                raise self._failure from exc if not isinstance(exc, asyncio.CancelledError) else None
        finally:
            self._task = None  # a row reported after `run` has ended must not cancel the caller's task
            gc.unfreeze()
        if self._failure is not None:
            raise self._failure

    def _episodes(self, session: Any) -> list[Any]:
        try:
            return self.episodes_for(session)
        except Exception as exc:
            raise LoopError(f"making the episodes of {session.id}: {one_line(exc)}") from exc

    async def _run_episode(self, state: _SessionState, episode: Any) -> None:
        try:
            while not episode.done and state.broken is None:
                if self.should_stop():
                    raise StopRequested
                request, error = await self.driver.build(episode)
                completion = await self._generate(request) if request is not None else None
                self._record(episode, request, completion, error)
        except InternalError as exc:
            self._internal(state, episode, exc)
        self._episode_done(state)

    async def _generate(self, request: Any) -> Any:
        """The driver's completion, counted in flight meanwhile (the progress line's engine account)."""
        tokens = len(request.prompt_token_ids or ())
        self.progress.sent(tokens)
        try:
            return await self.driver.generate(request)
        finally:
            self.progress.returned(tokens)

    def _internal(self, state: _SessionState, episode: Any, exc: InternalError) -> None:
        exc.step = exc.step or (episode.session_id, episode.task_idx, episode.step)
        self.internal_errors.append(exc)
        if state.broken is None:
            state.broken = exc

    async def _guarded(self, state: _SessionState, episode: Any, work: Any) -> Any:
        """`await work`, an internal error stopping the episode's session instead of the wave."""
        try:
            return await work
        except InternalError as exc:
            self._internal(state, episode, exc)
            return None

    async def _run_waves(self, states: list[_SessionState]) -> None:
        active = [(st, ep) for st in states for ep in st.episodes if not ep.done]
        while active:
            if self.should_stop():
                raise StopRequested
            built = await asyncio.gather(*(self._guarded(st, ep, self.driver.build(ep)) for st, ep in active))
            built = [b if b is not None else (None, None) for b in built]  # in order
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._guarded(st, ep, self._generate(req)))
                         if req is not None and st.broken is None else None
                         for (st, ep), (req, _) in zip(active, built)]
            completions = [task.result() if task is not None else None for task in tasks]
            still = []
            for (state, episode), (request, error), completion in zip(active, built, completions):
                if state.broken is None:
                    try:
                        self._record(episode, request, completion, error)
                    except InternalError as exc:
                        self._internal(state, episode, exc)
                if episode.done or state.broken is not None:
                    self._episode_done(state)
                else:
                    still.append((state, episode))
            active = still

    def _record(self, episode: Any, request: Any, completion: Any, error: str | None) -> None:
        at = (episode.session_id, episode.task_idx, episode.step)  # before judging moves the episode on
        outcome = self.driver.accept(episode, request, completion, error)
        try:
            self.progress.step(outcome.prompt_tokens, outcome.completion_tokens)
        except Exception as exc:  # counting the step is the step's own code too
            internal = InternalError.of("step", exc)
            internal.step = at
            raise internal from exc

    def _episode_done(self, state: _SessionState) -> None:
        if state.broken is None:
            self.progress.task_done()
        state.remaining -= 1
        if state.remaining == 0:
            self._finish(state)

    def _finish(self, state: _SessionState) -> None:
        if self._failure is not None:
            raise self._failure
        if state.broken is not None:  # not written: the rerun runs it, reusing what it got
            error = state.broken
            self.broken.append({"id": state.session.id, "error": {
                "kind": error.kind, "detail": error.detail, "where": error.where,
                "task": error.step[1] if error.step else None, "step": error.step[2] if error.step else None},
                "completions": self.driver.kept_completions(state.session.id)})
            return
        self.driver.forget(state.session.id)
        started = self.driver.meter.now()
        try:
            row = self.session_row(state.session, state.episodes, self.model_name)
        except Exception as exc:
            raise LoopError(f"building the result row of {state.session.id}: {one_line(exc)}") from exc
        self._unwritten += 1
        self._written.clear()
        loop = self._loop

        def durable(error: BaseException | None) -> None:  # in the writer thread
            try:
                loop.call_soon_threadsafe(self._durable, state, row, error)
            except RuntimeError:  # the loop is gone (a run that failed): the row is on disk all the same
                pass

        self.store.submit(dict(row), durable)  # the store keeps rows as plain dicts, read ones too
        try:
            self.driver.meter.session_written(self.driver.meter.now() - started)
        except Exception as exc:  # the row is written all the same; the run stops naming what failed
            raise LoopError(f"metering the result row of {state.session.id}: {one_line(exc)}") from exc

    def _durable(self, state: _SessionState, row: SessionResult, error: BaseException | None) -> None:
        """In the loop, once the writer thread has written `row` (or failed to). Runs as a plain loop
        callback, where an exception would only be logged: every error here stops the run instead."""
        self._unwritten -= 1
        session_id = row["id"]
        doing = f"writing {session_id}"
        try:
            if error is not None:
                self._fail(error if isinstance(error, RecordError) else RecordError(self.store.path, error))
                return
            doing = f"counting the labels of {session_id}"
            correct, scored = self.label_counts(row, state.session) if self.label_counts else (0, 0)
            doing = f"reporting {session_id} to the progress display"
            # from the written line, by the rule the warning and the reports read the result file with
            self.progress.session_done(correct, scored, sum(failed_requests([row]).values()))
            if self.on_finished is not None:
                doing = f"on_finished({session_id})"
                self.on_finished(session_id)
        except Exception as exc:  # noqa: BLE001 - any callback error stops the run with one line
            self._fail(LoopError(f"{doing}: {one_line(exc)}"))
        finally:
            if self._unwritten == 0:
                self._written.set()

    def _fail(self, error: BaseException) -> None:
        """Stop the run with `error` (the first one kept): the run's task is cancelled, and `run` raises it."""
        if self._failure is not None:
            return
        self._failure = error
        if self._task is not None and not self._task.done():
            self._cancelled = True
            self._task.cancel()
