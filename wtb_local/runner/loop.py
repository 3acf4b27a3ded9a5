"""The runner loop: every (session, task) episode in flight at once.

Continuous scheduling (default): each episode is its own coroutine; its next prompt goes to the engine
as soon as its previous reply is parsed and judged, so no episode waits for unrelated ones and an engine
with continuous batching (vLLM) always has every ready request. Waves: all unfinished episodes send
their current step together and the next wave starts when all replies are in — for backends whose
batches must not depend on arrival timing (transformers' padded `generate`, whose sampling is seeded per
batch). A session's result line is handed to the store's writer thread as soon as its four tasks are
done, and the session counts as finished (progress, `on_finished`) once that line is fsynced; `run`
returns after the last one is (docs/runner-speed.md §3).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wtb_local.faults import failed_requests
from wtb_local.runner.progress import Progress
from wtb_local.runner.steps import StepDriver
from wtb_local.runner.stopping import StopRequested
from wtb_local.runner.store import ResultStore

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

    def __post_init__(self) -> None:
        self.remaining = len(self.episodes)


class SessionRunner:
    """Runs sessions' episodes through a `StepDriver`, writing each finished session to a store."""

    def __init__(self, driver: StepDriver, store: ResultStore, *, model_name: str,
                 progress: Progress, episodes_for: Callable[[Any], list[Any]],
                 session_row: Callable[[Any, Sequence[Any], str], dict[str, Any]],
                 label_counts: Callable[[dict[str, Any], Any], tuple[int, int]] | None = None,
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
        self._unwritten = 0  # sessions handed to the writer, not yet durable
        self._written: asyncio.Event | None = None
        self._write_error: BaseException | None = None

    async def run(self, sessions: Sequence[Any], scheduling: str) -> None:
        self._loop = asyncio.get_running_loop()
        self._written = asyncio.Event()
        self._written.set()
        # Everything alive now (the engine, tokenizer, dataset) and the episodes made next live through the
        # run: leave them out of the garbage collector's full passes, each of which otherwise walks all of it
        # (a third of a second per pass with transformers loaded: docs/runner-speed.md §2), also while the
        # episodes are being made. Given back afterwards.
        gc.freeze()
        states = [_SessionState(s, self.episodes_for(s)) for s in sessions]
        gc.freeze()
        for state in states:  # sessions without tasks are finished at once
            if state.remaining == 0:
                self._finish(state)
        try:
            if scheduling == "waves":
                await self._run_waves(states)
            else:
                # A TaskGroup cancels the other episodes when one fails (a backend that raises is broken).
                async with asyncio.TaskGroup() as group:
                    for state in states:
                        for episode in state.episodes:
                            group.create_task(self._run_episode(state, episode))
            await self._written.wait()  # every finished session is durable and reported
        finally:
            gc.unfreeze()
        self._raise_write_error()

    async def _run_episode(self, state: _SessionState, episode: Any) -> None:
        while not episode.done:
            if self.should_stop():
                raise StopRequested
            request, error = await self.driver.build(episode)
            completion = await self.driver.generate(request) if request is not None else None
            self._record(episode, request, completion, error)
        self._episode_done(state)

    async def _run_waves(self, states: list[_SessionState]) -> None:
        active = [(st, ep) for st in states for ep in st.episodes if not ep.done]
        while active:
            if self.should_stop():
                raise StopRequested
            built = await asyncio.gather(*(self.driver.build(ep) for _, ep in active))  # in order
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self.driver.generate(req)) if req is not None else None
                         for req, _ in built]
            completions = [task.result() if task is not None else None for task in tasks]
            still = []
            for (state, episode), (request, error), completion in zip(active, built, completions):
                self._record(episode, request, completion, error)
                if episode.done:
                    self._episode_done(state)
                else:
                    still.append((state, episode))
            active = still

    def _record(self, episode: Any, request: Any, completion: Any, error: str | None) -> None:
        outcome = self.driver.accept(episode, request, completion, error)
        self.progress.step(outcome.prompt_tokens, outcome.completion_tokens)

    def _episode_done(self, state: _SessionState) -> None:
        self.progress.task_done()
        state.remaining -= 1
        if state.remaining == 0:
            self._finish(state)

    def _finish(self, state: _SessionState) -> None:
        self._raise_write_error()
        started = self.driver.meter.now()
        row = self.session_row(state.session, state.episodes, self.model_name)
        self._unwritten += 1
        self._written.clear()
        loop = self._loop

        def durable(error: BaseException | None) -> None:  # in the writer thread
            try:
                loop.call_soon_threadsafe(self._durable, state, row, error)
            except RuntimeError:  # the loop is gone (a run that failed): the row is on disk all the same
                pass

        self.store.submit(row, durable)
        self.driver.meter.session_written(self.driver.meter.now() - started)

    def _durable(self, state: _SessionState, row: dict[str, Any], error: BaseException | None) -> None:
        self._unwritten -= 1
        if error is not None:
            self._write_error = self._write_error or error
        else:
            correct, scored = self.label_counts(row, state.session) if self.label_counts else (0, 0)
            # from the written line, by the rule the warning and the reports read the result file with
            self.progress.session_done(correct, scored, sum(failed_requests([row]).values()))
            if self.on_finished is not None:
                self.on_finished(row["id"])
        if self._unwritten == 0:
            self._written.set()

    def _raise_write_error(self) -> None:
        if self._write_error is not None:
            raise RuntimeError(f"writing {self.store.path} failed: {self._write_error}") from self._write_error
