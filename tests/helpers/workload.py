"""The throughput benchmarks' workload: the benchmark's own step lengths on any model, real or random.

Random weights never write a tool call, so a benchmark answers every step with the gold reply (written
in the model's native format, the oracle's writer) after the engine has really generated a completion:
prompts, prefill, decode and timing are the engine's, the number of steps is the benchmark's.
`StepLengths` decides how many tokens that generation must produce (`ignore_eos` makes it exact):

- `fixed`: `max_new_tokens` for every step (the old benchmark: every completion equally long);
- `gold`: the length of the gold reply in the model's native format, in the model's tokenizer, plus the
  end-of-turn token: tens of tokens for a tool call, more for a final answer;
- `thinking`: `gold` plus a reasoning length drawn per request from a log-normal distribution with
  median `REASONING_MEDIAN` tokens and shape `REASONING_SIGMA`, clipped to `REASONING_RANGE`, seeded by
  sha256 of (seed, request id) so every mode and every rerun draws the same lengths.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.engines.openai_server import OpenAIBackend
from wtb_local.engines.vllm_engine import VLLMBackend

LENGTH_MODES = ("fixed", "gold", "thinking")
REASONING_MEDIAN = 512  # tokens; thinking models reason for hundreds to thousands of tokens per step
REASONING_SIGMA = 0.75  # log-normal shape: the middle 50% lie within 0.6x..1.66x of the median
REASONING_RANGE = (64, 4096)


def reasoning_tokens(request_id: str, seed: int = 0) -> int:
    """The reasoning length of one request (see module docstring); deterministic."""
    digest = hashlib.sha256(f"{seed}/{request_id}".encode()).digest()
    draw = random.Random(int.from_bytes(digest[:8], "big")).lognormvariate(
        math.log(REASONING_MEDIAN), REASONING_SIGMA
    )
    low, high = REASONING_RANGE
    return min(max(round(draw), low), high)


class StepLengths:
    """How many tokens the engine generates for a step whose judged reply is `text`."""

    def __init__(self, mode: str, encode: Callable[[str], list[int]], *, max_new_tokens: int = 32,
                 seed: int = 0) -> None:
        if mode not in LENGTH_MODES:
            raise ValueError(f"unknown lengths {mode!r}; choose one of {', '.join(LENGTH_MODES)}")
        self.mode, self.encode, self.max_new_tokens, self.seed = mode, encode, max_new_tokens, seed

    def tokens(self, request_id: str, text: str) -> int:
        if self.mode == "fixed":
            return self.max_new_tokens
        gold = len(self.encode(text)) + 1  # + the end-of-turn token that closes the reply
        return gold + (reasoning_tokens(request_id, self.seed) if self.mode == "thinking" else 0)

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"lengths": self.mode}
        if self.mode == "fixed":
            info["max_new_tokens"] = self.max_new_tokens
        if self.mode == "thinking":
            info["reasoning"] = {"distribution": "lognormal", "median": REASONING_MEDIAN,
                                 "sigma": REASONING_SIGMA, "clip": list(REASONING_RANGE), "seed": self.seed}
        return info


class GoldSteered:
    """Generates every request for real (exactly `lengths.tokens(...)` new tokens), then answers with the
    gold reply as raw text. `short` counts completions that came back shorter than asked (a context
    window too small for prompt + length): their figures undercount generation."""

    produces_text, needs_prompt, needs_gold = True, True, True

    def __init__(self, inner: Any, writer: Any, lengths: StepLengths) -> None:
        self.inner, self.writer, self.lengths, self.name = inner, writer, lengths, inner.name
        self.short = 0

    @property
    def fault_log(self) -> Any:  # the faults are the wrapped backend's (wtb_local/contract/faults.py)
        return self.inner.fault_log

    async def generate(self, request: GenerationRequest) -> Completion:
        text = self.writer.write(request.messages, request.tools, request.gold_reply)
        wanted = self.lengths.tokens(request.request_id, text)
        sampling = request.sampling.model_copy(update={"max_new_tokens": wanted})
        completion = await self.inner.generate(request.model_copy(update={"sampling": sampling}))
        if completion.error is not None:
            return completion
        self.short += int(completion.completion_tokens < wanted)
        return completion.model_copy(update={"text": text, "finish_reason": "stop"})

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "gold_steered": True, **self.lengths.describe()}


class OneAtATime:
    """Wraps a backend so that only one request is in flight (the paper's harness: batch size 1)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.produces_text, self.needs_prompt, self.needs_gold = True, True, inner.needs_gold
        self._lock = asyncio.Lock()

    @property
    def fault_log(self) -> Any:  # the faults are the wrapped backend's (wtb_local/contract/faults.py)
        return self.inner.fault_log

    async def generate(self, request: GenerationRequest) -> Completion:
        async with self._lock:
            return await self.inner.generate(request)

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "one_at_a_time": True}


class ExactLengthVLLM(VLLMBackend):
    """The in-process engine, generating exactly max_tokens (EOS ignored): for benchmarks only."""

    def _sampling_params(self, sampling: Any, seed: int) -> Any:
        params = super()._sampling_params(sampling, seed)
        # Set before the engine applies the generation config, as vLLM's own input processor does.
        params.ignore_eos = True
        return params


class ExactLengthOpenAI(OpenAIBackend):
    """A vLLM server, generating exactly max_tokens (`ignore_eos`, a vLLM extension): for benchmarks."""

    def _body(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {**super()._body(*args, **kwargs), "ignore_eos": True}


def replicated_dataset(source: Path, copies: int, out: Path) -> Path:
    """`source` (a dataset JSONL) `copies` times, ids renumbered (line N holds wild_tool_bench_N) and each
    copy's system prompt marked, so no copy shares a cached prefix with another."""
    lines = [json.loads(x) for x in source.read_text(encoding="utf-8").splitlines() if x.strip()]
    rows = []
    for i in range(copies * len(lines)):
        row = dict(lines[i % len(lines)])
        row["id"] = f"wild_tool_bench_{i}"
        row["english_env_info"] = f"{row['english_env_info']} (copy {i // len(lines)})"
        rows.append(json.dumps(row, ensure_ascii=False))
    out.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return out
