"""Generation backends, registered by name and imported only when used (torch/vllm stay unloaded)."""

from __future__ import annotations

import importlib
from typing import Any

from wtb_local.backends.base import Backend

# name -> "module:class"; heavy modules are imported on first use only.
_REGISTRY: dict[str, str] = {
    "scripted": "wtb_local.backends.scripted:ScriptedBackend",
    "oracle": "wtb_local.backends.oracle:OracleBackend",
    "instant": "wtb_local.backends.instant:InstantBackend",
    "replay": "wtb_local.backends.replay:ReplayBackend",
    "vllm": "wtb_local.backends.vllm_engine:VLLMBackend",
    "transformers": "wtb_local.backends.hf_generate:TransformersBackend",
    "openai": "wtb_local.backends.openai_server:OpenAIBackend",
    "openai-chat": "wtb_local.backends.openai_chat:OpenAIChatBackend",
}


def backend_names() -> list[str]:
    return sorted(_REGISTRY)


def backend_class(name: str) -> type[Backend]:
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(backend_names())}") from None
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def get_backend(name: str, **config: Any) -> Backend:
    return backend_class(name)(**config)


__all__ = ["Backend", "backend_class", "backend_names", "get_backend"]
