"""Chat-template keyword arguments as run settings: the thinking switch and free `k=v` pairs.

Families spell the thinking switch differently (Qwen3/GLM/Hunyuan/Laguna `enable_thinking`, DeepSeek-V3.1+,
Kimi-K3 and Granite `thinking`, Seed-OSS `thinking_budget`, gpt-oss and Hy3 `reasoning_effort`, MiniMax-M3
`thinking_mode`, Cohere Command `reasoning`). The template itself is the
best witness of which one it reads, so it is looked at first; the model id decides when the template
says nothing recognisable.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from wtb_local.formats.model_ids import normalize_model_id

# (model-id regex, kwarg) for templates that do not reveal their switch.
_FAMILY_SWITCHES: tuple[tuple[str, str], ...] = (
    (r"qwen3\.[5-9]|qwen3-(?!coder)|qwq", "enable_thinking"),
    (r"gemma-?4|nemotron-3-|apertus|minicpm-?5", "enable_thinking"),
    (r"glm-4\.[5-9]|glm-5", "enable_thinking"),
    (r"hunyuan", "enable_thinking"),
    (r"deepseek-v3\.[1-9]|deepseek-v4", "thinking"),
    (r"kimi-k3", "thinking"),
    (r"minimax-m3", "thinking_mode"),
    (r"(^|/)hy3|hy-3", "reasoning_effort"),
    (r"laguna", "enable_thinking"),
    (r"command-a|north-(?:mini-)?code|cohere2", "reasoning"),
    (r"granite-3\.[23]", "thinking"),
    (r"seed-oss", "thinking_budget"),
    (r"gpt-oss", "reasoning_effort"),
    # second-half 2026 families: the switch their vLLM reasoning parsers read (docs/parsers-and-templates.md)
    (r"mimo-v2", "enable_thinking"),
    (r"ling-?3", "enable_thinking"),
    (r"plamo-?3", "enable_thinking"),
)

# `thinking` as a template variable; `message.thinking is defined` (LFM2.5 reads a message field) is not one
_THINKING_VARIABLE = re.compile(r"(?:if|not|and|or)\s+thinking\b|(?<![.\w])thinking\s+is\s+(?:not\s+)?defined")
# Cohere Command: `reasoning` (a boolean; its `reasoning_effort` only switches it off with "none")
_REASONING_VARIABLE = re.compile(r"\breasoning\s+is\s+(?:not\s+)?(?:un)?defined")


def thinking_switch(model_id: str, template: str | None) -> str | None:
    """The template kwarg that turns thinking on/off for this model, or None when it has none."""
    text = template or ""
    if "Thinking effort level" in text:  # Inkling: no on/off switch, a numeric effort (--template-kwarg)
        return None
    if "enable_thinking" in text:
        return "enable_thinking"
    if "thinking_budget" in text:
        return "thinking_budget"
    if "thinking_mode" in text:
        return "thinking_mode"
    if _REASONING_VARIABLE.search(text):
        return "reasoning"
    if "reasoning_effort" in text:
        return "reasoning_effort"
    if _THINKING_VARIABLE.search(text):
        return "thinking"
    key = normalize_model_id(model_id)
    for pattern, switch in _FAMILY_SWITCHES:
        if re.search(pattern, key):
            return switch
    return None


def thinking_kwargs(thinking: bool | None, *, model_id: str, template: str | None) -> dict[str, Any]:
    """`--thinking/--no-thinking` as template kwargs; {} when not asked. Raises ValueError when the
    model's template has no switch (asking would silently do nothing)."""
    if thinking is None:
        return {}
    switch = thinking_switch(model_id, template)
    if switch is None:
        flag = "--thinking" if thinking else "--no-thinking"
        raise ValueError(f"{flag}: the chat template of {model_id or 'this model'} has no thinking switch "
                         "(use --template-kwarg KEY=VALUE if it reads another variable)")
    if switch == "thinking_budget":
        return {switch: -1 if thinking else 0}  # Seed-OSS: -1 unlimited, 0 answers without thinking
    if switch == "thinking_mode":
        return {switch: "enabled" if thinking else "disabled"}  # MiniMax-M3 (its default is "adaptive")
    if switch == "reasoning_effort":
        return {switch: "high" if thinking else _effort_off(model_id, template)}
    return {switch: thinking}


def _effort_off(model_id: str, template: str | None) -> str:
    """The `reasoning_effort` that means no reasoning: Hy3's "no_think" (its "low" still thinks); gpt-oss
    has none and always reasons, so "low" there."""
    if template:
        return "no_think" if "no_think" in template else "low"
    return "no_think" if re.search(r"(^|/)hy3|hy-3", normalize_model_id(model_id)) else "low"


def parse_template_kwargs(pairs: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """`k=v` strings -> dict; a value is JSON when it parses (true, 3, {"a": 1}), else the plain string."""
    result: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--template-kwarg {pair!r}: expected KEY=VALUE")
        try:
            result[key] = json.loads(raw)
        except json.JSONDecodeError:
            result[key] = raw
    return result


def resolve_template_kwargs(model_id: str, thinking: bool | None, pairs: list[str] | tuple[str, ...], *,
                            template: str | None = None) -> dict[str, Any]:
    """Run settings -> template kwargs: the thinking switch first, explicit `--template-kwarg` pairs
    override it. Without `template`, a local model directory's own template is read (no transformers)."""
    if thinking is not None and template is None:
        template = local_template(model_id)
    return {**thinking_kwargs(thinking, model_id=model_id, template=template), **parse_template_kwargs(pairs)}


def local_template(model_dir: str) -> str | None:
    """The chat template stored in a local model directory, if any (tokenizer_config.json or
    chat_template.jinja); None for hub ids and unreadable files."""
    folder = Path(model_dir).expanduser()
    if not folder.is_dir():
        return None
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: [{"name": ..., "template": ...}]
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("tool_use") or named.get("default")
    return template if isinstance(template, str) else None
