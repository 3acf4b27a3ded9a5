"""The throughput benchmarks' workload: step lengths (gold, thinking, fixed), the gold-steered wrapper and
the exact-length backends."""

from __future__ import annotations

import asyncio
import statistics
from pathlib import Path

import pytest

from tests.helpers.workload import (
    REASONING_MEDIAN,
    REASONING_RANGE,
    ExactLengthOpenAI,
    GoldSteered,
    OneAtATime,
    StepLengths,
    reasoning_tokens,
    replicated_dataset,
)
from wtb_local.contract.schema import Completion, GenerationRequest, SamplingConfig
from wtb_local.engines.config import OpenAIConfig


def test_reasoning_lengths_are_seeded_and_follow_the_documented_distribution() -> None:
    ids = [f"wild_tool_bench_{i}/{i % 4}/{i % 3}" for i in range(4000)]
    draws = [reasoning_tokens(rid) for rid in ids]
    assert draws == [reasoning_tokens(rid) for rid in ids]  # deterministic
    assert draws != [reasoning_tokens(rid, seed=1) for rid in ids]  # the seed matters
    assert all(REASONING_RANGE[0] <= n <= REASONING_RANGE[1] for n in draws)
    assert min(draws) == REASONING_RANGE[0] and max(draws) == REASONING_RANGE[1]  # both clips are reached
    assert abs(statistics.median(draws) - REASONING_MEDIAN) < 0.06 * REASONING_MEDIAN
    q1, _, q3 = statistics.quantiles(draws, n=4)
    # log-normal with sigma 0.75: quartiles at median * exp(-/+ 0.674 * 0.75) = 0.60x and 1.66x
    assert 0.55 * REASONING_MEDIAN < q1 < 0.66 * REASONING_MEDIAN
    assert 1.5 * REASONING_MEDIAN < q3 < 1.8 * REASONING_MEDIAN


def test_step_lengths() -> None:
    words = str.split  # a stand-in tokenizer: one token per word
    assert StepLengths("gold", words).tokens("s/0/0", "call two words") == 4  # + end of turn
    assert StepLengths("fixed", words, max_new_tokens=9).tokens("s/0/0", "call two words") == 9
    assert StepLengths("thinking", words).tokens("s/0/0", "a b") == 3 + reasoning_tokens("s/0/0")
    assert StepLengths("thinking", words).describe()["reasoning"]["median"] == REASONING_MEDIAN
    with pytest.raises(ValueError, match="unknown lengths 'long'; choose one of fixed, gold, thinking"):
        StepLengths("long", words)


class Recording:
    name = "rec"
    needs_gold = True

    def __init__(self, short_by: int = 0) -> None:
        self.asked: list[int] = []
        self.in_flight = self.max_in_flight = 0
        self.short_by = short_by

    async def generate(self, request: GenerationRequest) -> Completion:
        self.asked.append(request.sampling.max_new_tokens)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        return Completion(request_id=request.request_id, text="random noise", prompt_tokens=5,
                          completion_tokens=request.sampling.max_new_tokens - self.short_by,
                          finish_reason="length")

    def describe(self) -> dict:
        return {"backend": "rec"}


class Writer:
    def write(self, messages: list, tools: list, gold: dict) -> str:
        return gold["content"]


def _request(i: int, content: str) -> GenerationRequest:
    return GenerationRequest(request_id=f"s/{i}/0", session_id="s", task_idx=i, step=0,
                             sampling=SamplingConfig(max_new_tokens=7), gold_reply={"content": content})


def test_gold_steered_generates_the_gold_length_and_answers_with_the_gold_text() -> None:
    inner = Recording()
    steered = GoldSteered(inner, Writer(), StepLengths("gold", str.split))
    out = asyncio.run(steered.generate(_request(0, "the final answer is here")))
    assert inner.asked == [6]
    assert (out.text, out.finish_reason, out.completion_tokens, steered.short) == (
        "the final answer is here", "stop", 6, 0)
    assert steered.describe() == {"backend": "rec", "gold_steered": True, "lengths": "gold"}
    short = GoldSteered(Recording(short_by=2), Writer(), StepLengths("gold", str.split))
    asyncio.run(short.generate(_request(0, "a b")))
    assert short.short == 1


def test_one_at_a_time_keeps_one_request_in_flight() -> None:
    inner = Recording()

    async def many() -> None:
        wrapped = OneAtATime(inner)
        await asyncio.gather(*(wrapped.generate(_request(i, "x")) for i in range(5)))

    asyncio.run(many())
    assert inner.max_in_flight == 1 and len(inner.asked) == 5


def test_exact_length_server_requests_ignore_eos() -> None:
    from wtb_local.engines.sampling_defaults import ResolvedSampling

    client = ExactLengthOpenAI(OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    sampling = ResolvedSampling(do_sample=False, temperature=0.0, top_p=1.0, top_k=0, min_p=0.0,
                                repetition_penalty=1.0, max_new_tokens=12)
    body = client._body(_request(0, "x").model_copy(update={"prompt": "hi"}), sampling)
    assert (body["ignore_eos"], body["max_tokens"], body["prompt"]) == (True, 12, "hi")


def test_exact_length_engine_requests_ignore_eos() -> None:
    pytest.importorskip("vllm", reason="vLLM is not installed")
    from tests.helpers.workload import ExactLengthVLLM
    from wtb_local.engines.config import VLLMConfig
    from wtb_local.engines.sampling_defaults import ResolvedSampling

    sampling = ResolvedSampling(do_sample=False, temperature=0.0, top_p=1.0, top_k=0, min_p=0.0,
                                repetition_penalty=1.0, max_new_tokens=12)
    params = ExactLengthVLLM(VLLMConfig(model="m"))._sampling_params(sampling, 3)
    assert (params.ignore_eos, params.max_tokens, params.seed) == (True, 12, 3)


def test_replicated_dataset_renumbers_and_marks_copies(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "wild_tool_bench_7", "english_env_info": "Date"}\n'
                      '{"id": "wild_tool_bench_9", "english_env_info": "Day"}\n', encoding="utf-8")
    out = replicated_dataset(source, 2, tmp_path / "out.jsonl")
    assert out.read_text(encoding="utf-8").splitlines() == [
        '{"id": "wild_tool_bench_0", "english_env_info": "Date (copy 0)"}',
        '{"id": "wild_tool_bench_1", "english_env_info": "Day (copy 0)"}',
        '{"id": "wild_tool_bench_2", "english_env_info": "Date (copy 1)"}',
        '{"id": "wild_tool_bench_3", "english_env_info": "Day (copy 1)"}',
    ]
