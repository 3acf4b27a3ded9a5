"""Resolve sampling settings the way the paper's harness got them: transformers `generate` semantics.

The paper ran `model.generate` with the checkpoint's generation_config.json and only max_new_tokens set.
Under transformers, sampling happens only when `do_sample` is true (absent means greedy) and an unset
`top_k` means 50. Engines with other conventions (vLLM ignores `do_sample`) get the same effective
settings from here, so every backend follows one protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from wtb_local.contract.schema import SamplingConfig

# transformers' GenerationConfig defaults for the fields that change the sampled distribution.
_HF_DEFAULTS: dict[str, Any] = {
    "do_sample": False,
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": 50,
    "min_p": None,
    "repetition_penalty": 1.0,
}


class ResolvedSampling(BaseModel):
    """Effective settings of one request. `do_sample=False` means greedy (temperature is then ignored)."""

    do_sample: bool
    temperature: float
    top_p: float
    top_k: int  # 0: no top-k filter
    min_p: float
    repetition_penalty: float
    max_new_tokens: int

    def key(self) -> tuple[Any, ...]:
        """Requests with equal keys can share one batched `generate` call."""
        return tuple(self.model_dump().values())


def model_defaults(generation_config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The sampling fields of a generation_config (as a dict), completed with transformers' defaults."""
    merged = dict(_HF_DEFAULTS)
    for name in _HF_DEFAULTS:
        value = (generation_config or {}).get(name)
        if value is not None:
            merged[name] = value
    return merged


def resolve(sampling: SamplingConfig, defaults: Mapping[str, Any], max_new_tokens: int) -> ResolvedSampling:
    """Request overrides on top of the model defaults. An explicit temperature decides greedy (0) versus
    sampling (> 0), as it would when passed to `generate` with a matching `do_sample`."""
    do_sample = bool(defaults["do_sample"])
    temperature = float(defaults["temperature"])
    if sampling.temperature is not None:
        temperature = float(sampling.temperature)
        do_sample = temperature > 0
    top_p = float(sampling.top_p if sampling.top_p is not None else defaults["top_p"])
    return ResolvedSampling(
        do_sample=do_sample,
        temperature=temperature if do_sample else 0.0,
        top_p=top_p if do_sample else 1.0,
        top_k=int(defaults["top_k"] or 0) if do_sample else 0,
        min_p=float(defaults["min_p"] or 0.0) if do_sample else 0.0,
        repetition_penalty=float(defaults["repetition_penalty"]),
        max_new_tokens=max_new_tokens,
    )


def eos_ids(*sources: int | Iterable[int] | None) -> frozenset[int]:
    """Union of end-of-sequence ids given as ints, lists or None (tokenizer EOS, generation_config's)."""
    ids: set[int] = set()
    for source in sources:
        if source is None:
            continue
        if isinstance(source, int):
            ids.add(source)
        else:
            ids.update(int(i) for i in source)
    return frozenset(ids)


def strip_trailing(text: str, markers: Iterable[str]) -> str:
    """Remove one trailing end-of-sequence marker (the only special text the replies lose)."""
    from wtb_local.formats.end_of_turn import strip_end_of_turn  # deferred: start-up

    return strip_end_of_turn(text, markers, once=True)
