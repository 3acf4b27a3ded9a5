"""Check, before a run, that a chat template really shows the model its tools, calls and results.

Shipped templates fail silently in several ways (tool-call-formats.md §2.2-2.3): parallel calls raise or
vanish, calls disappear unless `content` is None, string arguments raise. The probe renders one
conversation that exercises all of it with each adaptation in a fixed order and keeps the first that
shows everything; if none does it falls back to the family's override in `chat_templates/`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jinja2
from pydantic import BaseModel, Field

from wtb_local.rendering.adapt import Adaptation, IdStyle, adapt_messages
from wtb_local.rendering.templates import TemplateError, override_for, template_sha256

# What a broken template raises while rendering (jinja's own errors, raise_exception, bad operand types).
RENDER_ERRORS: tuple[type[Exception], ...] = (jinja2.TemplateError, TypeError, ValueError, KeyError,
                                              AttributeError, IndexError)

# (template text, messages, tools) -> rendered prompt text
RenderFn = Callable[[str, list[dict[str, Any]], list[dict[str, Any]]], str]


class TemplateChoice(BaseModel):
    """What the run renders with; recorded in the run manifest."""

    source: str  # "tokenizer" | "override:<name>" | "path:<p>"
    sha256: str  # of the template text
    adaptation: Adaptation
    reason: str
    problems: list[str] = Field(default_factory=list)  # what the rejected variants got wrong


# Distinctive strings, so a substring test cannot pass by accident.
_UNCALLED_TOOL = "probe_registry_lookup"
_CALLS = [
    ("call_probe_alpha", "probe_weather", {"city": "Zanzibar-Q7", "days": 4817}),
    ("call_probe_bravo", "probe_weather", {"city": "Ulaanbaatar-R8", "days": 5923}),
    ("call_probe_delta", "probe_convert", {"amount": 12.75, "currency": "XKQD"}),
]
_RESULTS = ["RESULT-ALPHA-913 sunny", "RESULT-BRAVO-274 snow", "RESULT-DELTA-655 rate"]
_FINAL = "PROBE-ANSWER-k3v"
_FOLLOW_UP = "PROBE-FOLLOWUP-w9z"


def _tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": sorted(properties)}}}


PROBE_TOOLS: list[dict[str, Any]] = [
    _tool("probe_weather", "Weather forecast for a city.",
          {"city": {"type": "string"}, "days": {"type": "integer"}}),
    _tool("probe_convert", "Convert an amount to a currency.",
          {"amount": {"type": "number"}, "currency": {"type": "string"}}),
    _tool(_UNCALLED_TOOL, "Look an entry up in the registry.", {"key": {"type": "string"}}),
]


def probe_messages() -> list[dict[str, Any]]:
    """The probe conversation in the evaluator's OpenAI shape (spec §3)."""
    calls = [{"id": cid, "type": "function",
              "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
             for cid, name, args in _CALLS]
    results = [{"role": "tool", "tool_call_id": cid, "content": json.dumps(text, ensure_ascii=False)}
               for (cid, _, _), text in zip(_CALLS, _RESULTS, strict=True)]
    return [
        {"role": "system", "content": "Current Date: 2024-06-12 10:23:45 Wednesday"},
        {"role": "user", "content": "Weather in two cities and a conversion, please."},
        {"role": "assistant", "content": "", "tool_calls": calls},
        *results,
        {"role": "assistant", "content": _FINAL},
        {"role": "user", "content": _FOLLOW_UP},
    ]


def check_rendered(text: str) -> list[str]:
    """What the rendered probe is missing (empty when it shows everything)."""
    missing = []
    if _UNCALLED_TOOL not in text:
        missing.append("tool definitions not rendered")
    for _, name, args in _CALLS:
        for key, value in args.items():
            shown = value if isinstance(value, str) else json.dumps(value)
            if shown not in text:
                missing.append(f"call {name} argument {key}={shown} missing")
    missing.extend(f"tool result {r!r} missing" for r in _RESULTS if r not in text)
    missing.extend(f"turn {t!r} missing" for t in (_FINAL, _FOLLOW_UP) if t not in text)
    return missing


def native_id_style(template: str) -> IdStyle:
    """Mistral templates reject ids that are not 9 alphanumerics; Kimi-K2 ids name the function."""
    if "[TOOL_CALLS]" in template or "[TOOL_RESULTS]" in template:
        return "mistral"
    if "<|tool_calls_section_begin|>" in template:
        return "kimi"
    return "keep"


def variants(template: str, *, split: bool) -> list[Adaptation]:
    """Adaptations in probe order: the safe default (dict arguments, content "") first."""
    ids = native_id_style(template)
    return [Adaptation(arguments=a, content=c, ids=ids, split_parallel=split)
            for a in ("dict", "json") for c in ("empty", "none")]


def _try(render: RenderFn, template: str, source: str, candidates: list[Adaptation],
         problems: list[str]) -> Adaptation | None:
    messages = probe_messages()
    for adaptation in candidates:
        try:
            text = render(template, adapt_messages(messages, adaptation), PROBE_TOOLS)
        except RENDER_ERRORS as exc:  # a template failure is a finding, never a crash
            problems.append(f"{source} [{adaptation.label()}]: raised {type(exc).__name__}: {exc}")
            continue
        missing = check_rendered(text)
        if not missing:
            return adaptation
        problems.append(f"{source} [{adaptation.label()}]: " + "; ".join(missing))
    return None


def choose_template(render: RenderFn, template: str, source: str, model_id: str) -> tuple[str, TemplateChoice]:
    """Probe `template` (from `source`) and return the text to render with and the choice made.

    Order: the template with unsplit variants; for the tokenizer's own template the family override next
    (it keeps parallel calls in one message, as the model writes them); then split variants as a last
    resort. Raises TemplateError when nothing renders the probe completely.
    """
    problems: list[str] = []
    found = _try(render, template, source, variants(template, split=False), problems)
    if found is not None:
        reason = "default adaptation passed the probe" if found == variants(template, split=False)[0] \
            else f"first passing adaptation: {found.label()}"
        return template, TemplateChoice(source=source, sha256=template_sha256(template), adaptation=found,
                                        reason=reason, problems=problems)
    override = override_for(model_id) if source == "tokenizer" else None
    if override is not None:
        text = override.text()
        label = f"override:{override.name}"
        found = _try(render, text, label, variants(text, split=False), problems)
        if found is not None:
            return text, TemplateChoice(
                source=label, sha256=template_sha256(text), adaptation=found, problems=problems,
                reason=f"{source} template failed the probe; family override {override.name} passed")
        raise TemplateError(f"chat template {source} of {model_id} and its override {override.name} both "
                            f"fail the probe: {_first(problems, label)}")
    found = _try(render, template, source, variants(template, split=True), problems)
    if found is not None:
        return template, TemplateChoice(
            source=source, sha256=template_sha256(template), adaptation=found, problems=problems,
            reason="template cannot hold several calls in one message; parallel calls are split")
    hint = " (no override in chat_templates/ serves it)" if source == "tokenizer" else ""
    raise TemplateError(f"chat template {source} of {model_id} fails the probe{hint}: {_first(problems, source)}; "
                        "pass --chat-template NAME|PATH")


def _first(problems: list[str], source: str) -> str:
    """The problem of the source's default variant: the most telling one."""
    return next(p for p in problems if p.startswith(f"{source} ["))
