"""Where a run's time goes: the engine, the runner itself, and the prefix cache.

`ThroughputMeter` is fed by the step driver and the session loop:
- engine-busy time: the union of the intervals in which at least one request was at the backend (an
  engine that is busy 100% of the wall time is the bottleneck; much less means the runner starves it);
- the runner's own time per step: rendering the prompt, parsing the completion, judging the reply
  (a session's result write is counted once per session and spread over its steps in the mean);
- prompt tokens served from the prefix cache, when the backend reports them (vLLM does per request).
`summary()` is the `throughput` block of the manifest's invocation and of the run summary.
"""

from __future__ import annotations

import time
from typing import Any


class ThroughputMeter:
    def __init__(self, clock: Any = time.perf_counter) -> None:
        self._clock = clock
        self.started = clock()
        self.in_flight = 0
        self._busy_since = 0.0
        self.engine_busy_s = 0.0
        self.steps = 0
        self.render_s = 0.0
        self.parse_judge_s = 0.0
        self.write_s = 0.0
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

    def step(self, *, render_s: float, parse_judge_s: float, prompt_tokens: int, generated_tokens: int,
             cached_tokens: int | None) -> None:
        self.steps += 1
        self.render_s += render_s
        self.parse_judge_s += parse_judge_s
        self.max_step_s = max(self.max_step_s, render_s + parse_judge_s)
        self.prompt_tokens += prompt_tokens
        self.generated_tokens += generated_tokens
        if cached_tokens is not None:
            self.reported_prompt_tokens += prompt_tokens
            self.cached_tokens += cached_tokens

    def session_written(self, seconds: float) -> None:
        self.write_s += seconds

    def summary(self, tasks: int) -> dict[str, Any]:
        wall = self._clock() - self.started
        busy = self.engine_busy_s + (self._clock() - self._busy_since if self.in_flight else 0.0)
        own = self.render_s + self.parse_judge_s + self.write_s

        def per_step_ms(seconds: float) -> float | None:
            return round(1000 * seconds / self.steps, 4) if self.steps else None

        def rate(count: float) -> float | None:
            return round(count / wall, 3) if wall > 0 else None

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
            "runner_ms_breakdown": {"render": per_step_ms(self.render_s),
                                    "parse_judge": per_step_ms(self.parse_judge_s),
                                    "write": per_step_ms(self.write_s)},
        }


def summary_line(block: dict[str, Any]) -> str:
    """One line for the end of a run: `throughput: 12.1 tasks/s, ...`."""
    hit = block.get("prefix_cache_hit_rate")
    share = block.get("engine_busy_share")
    parts = [
        f"{block.get('tasks_per_s') or 0:.2f} tasks/s",
        f"{block.get('generated_tokens_per_s') or 0:.1f} generated tok/s",
        f"{block.get('prompt_tokens_per_s') or 0:.1f} prompt tok/s",
        "prefix cache " + ("not reported" if hit is None else f"{100 * hit:.1f}% of prompt tokens"),
        "engine busy " + ("-" if share is None else f"{100 * share:.0f}% of {block.get('wall_s', 0):.1f} s"),
        f"runner {block.get('runner_ms_per_step') or 0:.3f} ms/step",
    ]
    return "throughput: " + ", ".join(parts)
