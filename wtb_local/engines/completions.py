"""Completions shared by the engine backends."""

from __future__ import annotations

import time

from wtb_local.contract.schema import Completion, GenerationRequest


def error_completion(request: GenerationRequest, reason: str, started: float, *,
                     prompt_tokens: int = 0) -> Completion:
    """A request that could not be served: recorded with its reason, never raised."""
    return Completion(request_id=request.request_id, prompt_tokens=prompt_tokens, finish_reason="error",
                      error=reason, latency_s=time.perf_counter() - started)


def prompt_too_long(request: GenerationRequest, n_prompt: int, max_model_len: int,
                    started: float) -> Completion:
    """The context window must hold the prompt and at least one new token; such a prompt is not sent."""
    return error_completion(request, f"prompt too long: {n_prompt} tokens > max_model_len {max_model_len}",
                            started, prompt_tokens=n_prompt)
