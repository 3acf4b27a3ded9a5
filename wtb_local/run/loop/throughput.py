"""Where a run's time goes: the engine, the runner itself, and the prefix cache.

`ThroughputMeter` is fed by the step driver and the session loop:
- engine-busy time: the union of the intervals in which at least one request was at the backend (an
  engine that is busy 100% of the wall time is the bottleneck; much less means the runner starves it);
- the runner's own time per step on the event loop, by stage: rendering the prompt, tokenising it,
  parsing the completion, judging the reply, and building and serialising a finished session's result
  line (counted once per session and spread over its steps in the mean); the writer thread's writing and
  fsyncing (`writer_busy_s`) runs beside the loop and is not in it;
- the runner's ceiling: its busy share of the wall time and the steps per second it could have fed with
  an engine that answered at once (steps over the runner's own time) next to the steps per second the
  run made: a ceiling close to the achieved rate means the runner set the pace, a ceiling far above it
  the engine (docs/runner-speed.md §4);
- with render workers (`--render-workers`, formats/rendering/pool.py) rendering and tokenising run in other
  processes: they are reported (`render`, `tokenise`: the workers' time per step) but are not the loop's;
  the loop's share is sending the appended messages and reading the prompt back (`ipc`), and the ceiling is
  set by whichever is slower, the loop or the workers together (docs/runner-speed.md §6);
- prompt tokens served from the prefix cache, when the backend reports them (vLLM does per request).
`summary()` is the `throughput` block of the manifest's invocation and of the run summary.
"""

from __future__ import annotations

import time
from typing import Any, NotRequired

from typing_extensions import TypedDict

from wtb_local.contract.sections import ThroughputSection


class RunnerBreakdown(TypedDict):
    """The runner's own milliseconds per step, by stage (`ipc` only with render workers)."""

    render: float | None
    tokenise: float | None
    parse: float | None
    judge: float | None
    write: float | None
    ipc: NotRequired[float | None]


class ThroughputSummary(TypedDict):
    """`summary()`: rates, the engine's and the runner's busy time, and what the runner alone could sustain
    (None where a figure has no steps or no wall time under it, or the backend does not report it)."""

    wall_s: float
    tasks: int
    steps: int
    tasks_per_s: float | None
    generated_tokens_per_s: float | None
    prompt_tokens_per_s: float | None
    engine_busy_s: float
    engine_busy_share: float | None
    prompt_tokens: int
    generated_tokens: int
    cached_prompt_tokens: int | None
    prefix_cache_hit_rate: float | None
    runner_ms_per_step: float | None
    runner_ms_per_step_max: float | None
    runner_ms_breakdown: RunnerBreakdown
    runner_busy_s: float
    runner_busy_share: float | None
    steps_per_s: float | None
    runner_ceiling_steps_per_s: float | None
    writer_busy_s: float | None
    render_workers: int
    render_workers_busy_s: float | None


class ThroughputMeter:
    def __init__(self, clock: Any = time.perf_counter) -> None:
        self._clock = clock
        self.started = clock()
        self.in_flight = 0
        self._busy_since = 0.0
        self.engine_busy_s = 0.0
        self.steps = 0
        self.render_s = 0.0
        self.tokenise_s = 0.0
        self.parse_s = 0.0
        self.judge_s = 0.0
        self.write_s = 0.0
        self.writer_busy_s: float | None = None  # set by the caller from the result store, when it has one
        self.pool: Any = None  # a RenderPool rendering off the loop (its `size` and `loop_s`)
        self.max_step_s = 0.0
        self.prompt_tokens = 0
        self.generated_tokens = 0
        self.reported_prompt_tokens = 0  # prompt tokens of the requests whose cache hits were reported
        self.cached_tokens = 0

    def now(self) -> float:
        return self._clock()

    def request_sent(self) -> None:
        if self.in_flight == 0:
            self._busy_since = self._clock()
        self.in_flight += 1

    def request_done(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self.engine_busy_s += self._clock() - self._busy_since

    def step(self, *, render_s: float, tokenise_s: float = 0.0, parse_s: float = 0.0, judge_s: float = 0.0,
             prompt_tokens: int, generated_tokens: int, cached_tokens: int | None) -> None:
        self.steps += 1
        self.render_s += render_s
        self.tokenise_s += tokenise_s
        self.parse_s += parse_s
        self.judge_s += judge_s
        self.max_step_s = max(self.max_step_s, render_s + tokenise_s + parse_s + judge_s)
        self.prompt_tokens += prompt_tokens
        self.generated_tokens += generated_tokens
        if cached_tokens is not None:
            self.reported_prompt_tokens += prompt_tokens
            self.cached_tokens += cached_tokens

    def session_written(self, seconds: float) -> None:
        self.write_s += seconds

    def summary(self, tasks: int) -> ThroughputSummary:
        wall = self._clock() - self.started
        busy = self.engine_busy_s + (self._clock() - self._busy_since if self.in_flight else 0.0)
        workers = self.pool.size if self.pool is not None else 0
        ipc_s = self.pool.loop_s if self.pool is not None else 0.0
        rendering = self.render_s + self.tokenise_s
        own = (ipc_s if workers else rendering) + self.parse_s + self.judge_s + self.write_s
        # the slower of the loop and the workers together sets the pace the runner can feed
        limit = max(own, rendering / workers) if workers else own

        def per_step_ms(seconds: float) -> float | None:
            return round(1000 * seconds / self.steps, 4) if self.steps else None

        def rate(count: float) -> float | None:
            return round(count / wall, 3) if wall > 0 else None

        breakdown: RunnerBreakdown = {"render": per_step_ms(self.render_s), "tokenise": per_step_ms(self.tokenise_s),
                     "parse": per_step_ms(self.parse_s), "judge": per_step_ms(self.judge_s),
                     "write": per_step_ms(self.write_s)}
        if workers:
            breakdown["ipc"] = per_step_ms(ipc_s)
        return {
            "wall_s": round(wall, 3),
            "tasks": tasks,
            "steps": self.steps,
            "tasks_per_s": rate(tasks),
            "generated_tokens_per_s": rate(self.generated_tokens),
            "prompt_tokens_per_s": rate(self.prompt_tokens),
            "engine_busy_s": round(busy, 3),
            "engine_busy_share": round(busy / wall, 4) if wall > 0 else None,
            "prompt_tokens": self.prompt_tokens,
            "generated_tokens": self.generated_tokens,
            "cached_prompt_tokens": self.cached_tokens if self.reported_prompt_tokens else None,
            # None: the backend does not report cache hits (transformers, oracle, servers without
            # --enable-prompt-tokens-details)
            "prefix_cache_hit_rate": round(self.cached_tokens / self.reported_prompt_tokens, 4)
            if self.reported_prompt_tokens else None,
            "runner_ms_per_step": per_step_ms(own),
            "runner_ms_per_step_max": round(1000 * self.max_step_s, 3) if self.steps else None,
            "runner_ms_breakdown": breakdown,
            "runner_busy_s": round(own, 3),
            "runner_busy_share": round(own / wall, 4) if wall > 0 else None,
            "steps_per_s": rate(self.steps),
            # the step rate the runner alone could have sustained: steps over its own time
            "runner_ceiling_steps_per_s": round(self.steps / limit, 1) if limit > 0 else None,
            "writer_busy_s": round(self.writer_busy_s, 3) if self.writer_busy_s is not None else None,
            # 0: rendered on the loop; N: by N worker processes, busy `render_workers_busy_s` together
            "render_workers": workers,
            "render_workers_busy_s": round(rendering, 3) if workers else None,
        }


def run_end_line(block: ThroughputSection, *, ran: bool, replayed: ThroughputSection | None = None,
                 replay: bool = False) -> str | None:
    """The throughput line `run` prints at its end, only for figures measured now: a replay's speed is the
    speed of reading a file (its recorded run's figures are shown, marked as read back), and a rerun that ran
    nothing prints the recorded figures marked as such (docs/runner-speed.md §8)."""
    if replay:
        if replayed is not None and replayed.steps:
            return summary_line(replayed, "throughput of the replayed run (recorded, not measured now)")
        return "throughput: not measured (a replay answers with recorded completions)"
    if not block.steps:
        return None
    if not ran:
        return summary_line(block, "throughput of the earlier invocation (recorded, not measured now)")
    return summary_line(block)


def summary_line(block: ThroughputSection, label: str = "throughput") -> str:
    """One line for the end of a run: `throughput: 12.1 tasks/s, ...`."""
    hit, share = block.prefix_cache_hit_rate, block.engine_busy_share
    parts = [
        f"{block.tasks_per_s or 0:.2f} tasks/s",
        f"{block.generated_tokens_per_s or 0:.1f} generated tok/s",
        f"{block.prompt_tokens_per_s or 0:.1f} prompt tok/s",
        "prefix cache " + ("not reported" if hit is None else f"{100 * hit:.1f}% of prompt tokens"),
        "engine busy " + ("-" if share is None else f"{100 * share:.0f}% of {block.wall_s or 0:.1f} s"),
        f"runner {block.runner_ms_per_step or 0:.3f} ms/step",
    ]
    share, ceiling = block.runner_busy_share, block.runner_ceiling_steps_per_s
    if share is not None and ceiling is not None:
        parts.append(f"runner busy {100 * share:.0f}%, could feed {ceiling:.0f} steps/s "
                     f"(ran {block.steps_per_s or 0:.1f})")
    return f"{label}: " + ", ".join(parts)
