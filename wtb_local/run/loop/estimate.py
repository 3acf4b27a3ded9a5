"""A run's time, estimated before it starts, from the documented runs (docs/runner-speed.md §8).

Tokens to generate: the tasks to run times the steps a task took (37 steps for 32 tasks) times the tokens
a step generated (4,090 tokens over those 37 steps, capped at `max_new_tokens`), both the means of the
whole-sample run in docs/real-model.md §5. Rate: the generated tokens per second of wall time (prefill and
prefix cache included) that a documented run of the backend measured on a CPU. The only machine
documented is a 2-core AMD EPYC running Qwen2.5-Coder-0.5B; on a GPU, or for another backend, no rate is
known and the line says so: the progress line's `eta`, from this run's own tasks, is then the estimate.
Prompt tokens are not a separate term: only a task's first prompt is known before its replies, and the
recorded rates already include the prefill of every prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STEPS_PER_TASK = 37 / 32  # docs/real-model.md §5: every backend took 37 steps for the sample's 32 tasks
TOKENS_PER_STEP = 4090 / 37  # the vllm row there: 14.2 generated tok/s over 288 s wall


@dataclass(frozen=True)
class Rate:
    tokens_per_s: float
    source: str


# generated tokens per second of wall time, on a CPU (the 2-core EPYC of the documented runs)
CPU_RATES = {
    "vllm": Rate(14.2, "the in-process vLLM CPU engine's, docs/real-model.md §5"),
    "openai": Rate(16.3, "a local vllm serve on the CPU, every episode in flight, docs/real-model.md §5"),
    "openai-chat": Rate(16.3, "a local vllm serve's chat endpoint on the CPU, docs/real-model.md §5"),
    "transformers": Rate(680 / 1316.9, "transformers on the CPU, docs/explain-real-model.md (680 tok in 1,317 s)"),
}
# how far the estimate was from the documented runs' time (tests/run/test_estimate.py recomputes it)
DOCUMENTED_ERROR = "off by -62% to +201% on the documented runs"


@dataclass(frozen=True)
class Estimate:
    tasks: int
    steps: float
    tokens: float
    seconds: float | None
    rate: Rate | None

    def line(self, where: str = "this backend on this machine") -> str:
        work = f"{self.tasks:,} task(s), about {self.steps:,.0f} steps and {self.tokens:,.0f} generated tok"
        if self.rate is None or self.seconds is None:
            return (f"estimate: {work}; no recorded rate for {where}: the progress line's eta, from this run's "
                    "first tasks, is the estimate")
        tps = self.rate.tokens_per_s
        return (f"estimate: about {_duration(self.seconds)} for {work} at {tps:.{1 if tps >= 1 else 2}f} tok/s "
                f"({self.rate.source}; {DOCUMENTED_ERROR}); the progress line's eta updates it")


def estimate(backend: str, tasks: int, max_new_tokens: int, gpu: bool) -> Estimate:
    steps = tasks * STEPS_PER_TASK
    tokens = steps * min(TOKENS_PER_STEP, max_new_tokens)
    rate = None if gpu else CPU_RATES.get(backend)
    return Estimate(tasks, steps, tokens, tokens / rate.tokens_per_s if rate else None, rate)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def start_line(backend: str, capabilities: Any, tasks: int, max_new_tokens: int) -> str | None:
    """The line a run prints before its first request; None for a backend that answers at once (oracle,
    scripted, replay). A server's machine is unknown: this machine's GPUs stand for it."""
    if not (capabilities.loads_weights or capabilities.remote) or tasks == 0:
        return None
    from wtb_local.engines.environment import gpus  # deferred: runs nvidia-smi

    return estimate(backend, tasks, max_new_tokens, gpu=bool(gpus())).line()
