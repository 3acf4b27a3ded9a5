"""Prompt rendering with the model's own chat template: template resolution and overrides, history
adaptation, the start-of-run template probe, template kwargs, and `PromptRenderer`.

Names are imported lazily so `import wtb_local.formats.rendering` never pulls in transformers.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Adaptation": "wtb_local.formats.rendering.adapt",
    "adapt_messages": "wtb_local.formats.rendering.adapt",
    "mistral_id": "wtb_local.formats.rendering.adapt",
    "TemplateChoice": "wtb_local.formats.rendering.probe",
    "choose_template": "wtb_local.formats.rendering.probe",
    "PromptRenderer": "wtb_local.formats.rendering.renderer",
    "RenderedPrompt": "wtb_local.formats.rendering.renderer",
    "TemplateError": "wtb_local.formats.rendering.templates",
    "list_overrides": "wtb_local.formats.rendering.templates",
    "override_for": "wtb_local.formats.rendering.templates",
    "resolve_template": "wtb_local.formats.rendering.templates",
    "parse_template_kwargs": "wtb_local.formats.rendering.kwargs",
    "resolve_template_kwargs": "wtb_local.formats.rendering.kwargs",
    "thinking_kwargs": "wtb_local.formats.rendering.kwargs",
}

__all__ = [
    "Adaptation",
    "PromptRenderer",
    "RenderedPrompt",
    "TemplateChoice",
    "TemplateError",
    "adapt_messages",
    "choose_template",
    "list_overrides",
    "mistral_id",
    "override_for",
    "parse_template_kwargs",
    "resolve_template",
    "resolve_template_kwargs",
    "thinking_kwargs",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'wtb_local.formats.rendering' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
