"""The vLLM backend sorts what its engine raises (docs/reliability.md): vLLM's own verdict that the prompt
does not fit is the step's `prompt too long`; a dead engine, out of memory, any other refusal of the request
and a request the engine dropped are machine faults. vLLM's real exception classes, raised by a stand-in for
the started engine (the real engine's death is tests/faults/test_backend_faults_vllm.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.engines.helpers import make_request
from tests.tiers import needs_vllm

# An engine or server start in the module fixture (vLLM's CPU build) counts in the first test's limit:
# well under a minute on 2 idle cores, several minutes when they are shared.
pytestmark = [pytest.mark.vllm, needs_vllm, pytest.mark.timeout(900)]


class _Output:
    def __init__(self, finish_reason: str) -> None:
        self.outputs = [type("Out", (), {"text": "x", "token_ids": [5], "finish_reason": finish_reason,
                                         "stop_reason": None})()]


class _Engine:
    """What AsyncLLM.generate does for one request: raise, or end with the given finish reason."""

    def __init__(self, outcome: BaseException | str) -> None:
        self.outcome = outcome

    async def generate(self, prompt: Any, params: Any, request_id: str) -> Any:
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        yield _Output(self.outcome)


def _generate(outcome: BaseException | str) -> Any:
    from wtb_local.engines.config import VLLMConfig
    from wtb_local.engines.sampling_defaults import model_defaults
    from wtb_local.engines.vllm_engine import VLLMBackend

    backend = VLLMBackend(VLLMConfig(model="m"))  # as start() leaves it
    backend._engine, backend._max_model_len, backend._defaults = _Engine(outcome), 4096, model_defaults({})
    try:
        return asyncio.run(backend.generate(make_request(0, prompt="", prompt_token_ids=list(range(1, 11)))))
    except Exception as exc:  # noqa: BLE001 - the test reads what was raised
        return exc


def test_the_engines_verdict_that_the_prompt_does_not_fit_is_the_steps() -> None:
    from vllm.exceptions import VLLMValidationError

    message = ("This model's maximum context length is 4096 tokens. However, your prompt contains 5000 input tokens, "
               "which exceeds this limit even without any output tokens. Please reduce the length of the input "
               "prompt.")
    completion = _generate(VLLMValidationError(message, parameter="input_tokens", value=5000))
    assert completion.finish_reason == "error" and completion.prompt_tokens == 10
    assert completion.error == f"prompt too long: {message} (parameter=input_tokens, value=5000)"


def test_what_the_engine_does_is_a_fault() -> None:
    import torch
    from vllm.exceptions import VLLMValidationError
    from vllm.v1.engine.exceptions import EngineDeadError, EngineGenerateError

    from wtb_local.contract.faults import BackendError, EngineDied, OutOfMemory, RequestRejected

    cases = [
        (EngineDeadError(), EngineDied,
         "EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause."),
        (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 MiB"), OutOfMemory,
         "OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB"),
        (VLLMValidationError("Token id 999999 is out of vocabulary"), RequestRejected,
         "VLLMValidationError: Token id 999999 is out of vocabulary"),
        (EngineGenerateError("output processing failed"), BackendError,
         "EngineGenerateError: output processing failed"),
        ("abort", BackendError, "the engine ended wild_tool_bench_000/0/0 with 'abort'"),
    ]
    for outcome, cls, detail in cases:
        fault = _generate(outcome)
        assert (type(fault), fault.detail) == (cls, detail)
    assert _generate(torch.OutOfMemoryError("CUDA out of memory")).advice == (
        "rerun the same command with a smaller --max-num-seqs or --gpu-memory-utilization to resume")
