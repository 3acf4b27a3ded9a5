"""Check, before a run, that a chat template really shows the model its tools, calls and results.

Shipped templates fail silently in several ways (docs/parsers-and-templates.md): parallel calls raise or
vanish, calls disappear unless `content` is None, string arguments raise, and history calls are re-rendered
in a syntax the model never writes (unquoted strings, stringified numbers, missing commas). The probe
renders one conversation with parallel and sequential calls of typed arguments, cuts each past call out of
the rendering and parses it back with the run's parser; it tries each adaptation in a fixed order and keeps
the first that shows everything and reads back exactly; if none does it falls back to the family's
override in `chat_templates/`, else stops naming the problem and `--chat-template`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from typing import Any, Protocol

import jinja2
from pydantic import BaseModel, Field

from wtb_local.contract.messages import ChatMessage, JSONObject, ToolCall, ToolSchema
from wtb_local.formats.end_of_turn import strip_end_of_turn
from wtb_local.formats.rendering.adapt import Adaptation, IdStyle, adapt_messages
from wtb_local.formats.rendering.templates import TemplateError, override_for, template_sha256

# What a broken template raises while rendering (jinja's own errors, raise_exception, bad operand types).
RENDER_ERRORS: tuple[type[Exception], ...] = (jinja2.TemplateError, TypeError, ValueError, KeyError,
                                              AttributeError, IndexError)



class RenderFn(Protocol):
    """(template text, messages, tools) -> rendered text, with or without the generation prompt; the
    template's clock frozen at the conversation's date (clock.render_chat), so renderings compare."""

    def __call__(self, template: str, messages: list[ChatMessage], tools: list[ToolSchema], *,
                 add_generation_prompt: bool = True, **context: Any) -> str: ...


class TemplateChoice(BaseModel):
    """What the run renders with; recorded in the run manifest."""

    source: str  # "tokenizer" | "override:<name>" | "path:<p>"
    sha256: str  # of the template text
    adaptation: Adaptation
    reason: str
    problems: list[str] = Field(default_factory=list)  # what the rejected variants got wrong


# Distinctive strings, so a presence test cannot pass by accident. The calls carry every argument type a
# template can garble (strings with quotes and non-ASCII, integers, floats, booleans, nested objects, lists):
# templates re-render history calls themselves, and a type lost there is a wrong example for the model.
_UNCALLED_TOOL = "probe_registry_lookup"
_PARALLEL = [
    ("call_probe_alpha", "probe_weather", {"city": "Zanzibar-Q7", "days": 4817}),
    ("call_probe_bravo", "probe_weather", {"city": "S\u00e3o Paulo \u2014 \u5317\u4eac-R8", "days": 5923}),
    ("call_probe_delta", "probe_convert", {"amount": 12.75, "currency": "XKQD", "exact": True,
                                           "route": {"via": ["EUR", "USD"], "hops": 2, "fee": 0.5},
                                           "notes": ['say "hi"', "caf\u00e9"]}),
]
_SEQUENTIAL = [
    ("call_probe_echo", "probe_schedule", {"when": "2024-06-13", "count": 0, "urgent": False,
                                           "ratio": 1.5, "slots": [1, 2, 3], "meta": {}}),
]
_CALLS = _PARALLEL + _SEQUENTIAL
_RESULTS = ["RESULT-ALPHA-913 sunny", "RESULT-BRAVO-274 snow", "RESULT-DELTA-655 rate", "RESULT-ECHO-388 booked"]
_FINAL = "PROBE-ANSWER-k3v"
_FOLLOW_UP = "PROBE-FOLLOWUP-w9z"


def _tool(name: str, description: str, properties: JSONObject) -> ToolSchema:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": sorted(properties)}}}


PROBE_TOOLS: list[ToolSchema] = [
    _tool("probe_weather", "Weather forecast for a city.",
          {"city": {"type": "string"}, "days": {"type": "integer"}}),
    _tool("probe_convert", "Convert an amount to a currency.",
          {"amount": {"type": "number"}, "currency": {"type": "string"}, "exact": {"type": "boolean"},
           "route": {"type": "object"}, "notes": {"type": "array", "items": {"type": "string"}}}),
    _tool("probe_schedule", "Schedule a follow-up.",
          {"when": {"type": "string"}, "count": {"type": "integer"}, "urgent": {"type": "boolean"},
           "ratio": {"type": "number"}, "slots": {"type": "array", "items": {"type": "integer"}},
           "meta": {"type": "object"}}),
    _tool(_UNCALLED_TOOL, "Look an entry up in the registry.", {"key": {"type": "string"}}),
]


def _call_messages(calls: list[tuple[str, str, JSONObject]], results: list[str]) -> list[ChatMessage]:
    tool_calls: list[ToolCall] = [{"id": cid, "type": "function",
                                   "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
                                  for cid, name, args in calls]
    messages: list[ChatMessage] = [{"role": "assistant", "content": "", "tool_calls": tool_calls}]
    messages.extend({"role": "tool", "tool_call_id": cid, "content": json.dumps(text, ensure_ascii=False)}
                    for (cid, _, _), text in zip(calls, results, strict=True))
    return messages


def probe_messages() -> list[ChatMessage]:
    """The probe conversation in the evaluator's OpenAI shape (docs/evaluation.md §3): parallel calls, their results, a
    sequential call that follows them, its result, a final answer and a new user turn."""
    messages: list[ChatMessage] = [
        {"role": "system", "content": "Current Date: 2024-06-12 10:23:45 Wednesday"},
        {"role": "user", "content": "Weather in two cities and a conversion, then book a follow-up."},
        *_call_messages(_PARALLEL, _RESULTS[:3]),
        *_call_messages(_SEQUENTIAL, _RESULTS[3:]),
        {"role": "assistant", "content": _FINAL},
        {"role": "user", "content": _FOLLOW_UP},
    ]
    return messages


def check_rendered(text: str) -> list[str]:
    """What the rendered probe does not show at all (empty when tools, results and turns are all there).
    Whether the calls read back is `check_calls`."""
    missing = []
    if _UNCALLED_TOOL not in text:
        missing.append("tool definitions not rendered")
    missing.extend(f"tool result {r!r} missing" for r in _RESULTS if r not in text)
    missing.extend(f"turn {t!r} missing" for t in (_FINAL, _FOLLOW_UP) if t not in text)
    return missing


def typed(value: Any) -> str:
    """A value as canonical JSON: 3, 3.0, "3" and true all differ (Python's == would equate 1, 1.0, True)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _arguments(call: ToolCall) -> Any:
    arguments = (call.get("function") or {}).get("arguments")
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return arguments


def cut_turn(render: RenderFn, template: str, messages: list[ChatMessage], index: int,
             tools: list[ToolSchema]) -> str | None:
    """The text the template writes for assistant message `index` in history, after the role header
    (end-of-turn markers removed). None: no clean cut. See `cut_completion`."""
    cut = cut_completion(render, template, messages, index, tools)
    return None if cut is None else cut[0]


def cut_completion(render: RenderFn, template: str, messages: list[ChatMessage], index: int,
                   tools: list[ToolSchema]) -> tuple[str, str] | None:
    """(history form of assistant message `index` after its role header, what the generation prompt
    pre-fills beyond that header); None when there is no clean cut.

    Tried in order: (1) the history with the turn extends the history with a generation prompt: the rest
    is the turn. (2) The generation prompt pre-fills text the history form lacks (`<think>\n`): the turn
    starts after the part of the role header both share. (3) Text before the turn renders differently once
    it is no longer last (Hermes closes a last tool result without a newline): the turn starts after the
    last generation prompt header. (4) No generation prompt and text placed by position (Mistral puts the
    system prompt and tools in the last user turn): the turn starts after the previous message's text and
    what follows it in the prompt, when that occurs exactly once. (5) No generation prompt, but the last
    turn ends with a pre-fill while it is last: the turn starts where the two renderings part. The
    renderings compared share one clock, the conversation's date (`render` freezes it: clock.py).
    """
    before, upto = messages[:index], messages[:index + 1]
    return _cut(render, template, before, upto, tools)


def _cut(render: RenderFn, template: str, before: list[ChatMessage], upto: list[ChatMessage],
         tools: list[ToolSchema]) -> tuple[str, str] | None:
    prompt = render(template, before, tools, add_generation_prompt=True)
    full = render(template, upto, tools, add_generation_prompt=False)
    if full.startswith(prompt):
        return _strip_end(full[len(prompt):]), ""
    base = render(template, before, tools, add_generation_prompt=False)
    if prompt.startswith(base) and len(prompt) > len(base):
        header = prompt[len(base):]
        if full.startswith(base):
            segment = full[len(base):]
            shared = _back_off(os.path.commonprefix([header, segment]), header)
            if shared.strip():
                return _strip_end(segment[len(shared):]), header[len(shared):]
        at = full.rfind(header)
        return (_strip_end(full[at + len(header):]), "") if at >= 0 else None
    body = _anchored_cut(before, prompt, full)
    if body is not None:
        return body, ""
    # (5) no separate generation prompt, but the last turn ends with a pre-fill whenever it is last
    # (Hunyuan with thinking off appends `<think>\n\n</think>\n`): the turn starts where the two
    # renderings part, provided that is right after the previous message's text and its closing markup
    shared = _back_off(os.path.commonprefix([prompt, full]), prompt)
    last = _last_text(before)
    if last and last in shared and len(shared) - shared.rindex(last) - len(last) <= _MARKUP:
        prefill = prompt[len(shared):]
        body = full[len(shared):].rstrip()
        # such templates append the pre-fill after whatever turn is last, this one included
        if prefill.strip() and body.endswith(prefill.rstrip()):
            body = body[: -len(prefill.rstrip())]
        return _strip_end(body), prefill
    return None


_MARKUP = 64  # at most this much closing markup between a message's text and the next turn


def _back_off(shared: str, header: str) -> str:
    """A common prefix cut back to the end of its last whole special token or line (unless it is all of
    `header`): `<｜Assistant｜><` shared by `<think>` and `<｜tool▁calls▁begin｜>` is not a boundary."""
    if shared == header:
        return shared
    return shared[: max(shared.rfind(">"), shared.rfind("\n")) + 1]


def _last_text(before: list[ChatMessage]) -> str:
    content = before[-1].get("content")
    return content if isinstance(content, str) else ""


# A generation prompt that opens a reasoning block the history form lacks (`<think>\n`): the model closes
# it before writing the turn, so the completion starts with the closing tag. A pre-filled, closed block
# (`<think>\n\n</think>\n` with thinking off, Seed-OSS's budget note with a zero budget): the turn follows
# it as is. The blocks are those of wtb_local/formats/reasoning_blocks.py.
_TAG_OPENER = re.compile(r"^\s*<[A-Za-z][\w:-]*>\s*$")
# Only whitespace pre-filled before a body that closes the block itself (Nemotron 3 opens `<think>\n`
# where its history writes `<think></think>`: the cut falls after `<think>`).
_CLOSER = re.compile(r"</[A-Za-z][\w:-]*>")


def completion_after(prefill: str, body: str) -> str | None:
    """What a model writes after a generation prompt that pre-fills `prefill`, to produce the history
    form `body`: `body` itself (no pre-fill, a closed block, or a body that closes the block itself), or the
    block's closer + `body` after a pre-filled opener (`</tag>` + blank line + `body` after a `<tag>`); None
    when the pre-filled text is anything else (no honest completion can be derived)."""
    from wtb_local.formats.reasoning_blocks import closer_of, is_closed_block  # deferred: start-up

    if not prefill or is_closed_block(prefill) or (not prefill.strip() and _CLOSER.match(body)):
        return body
    closer = closer_of(prefill)
    if closer is None:
        return None
    if body.lstrip().startswith(closer):  # the history form closes the block itself (GLM-4.7: `</think>`)
        return body
    return f"{closer}\n\n{body}" if _TAG_OPENER.match(prefill) else closer + body


def _anchored_cut(before: list[ChatMessage], prompt: str, full: str) -> str | None:
    last = before[-1].get("content") if before else None
    if not isinstance(last, str) or not last or last not in prompt:
        return None
    anchor = last + prompt[prompt.rindex(last) + len(last):]
    if full.count(anchor) != 1:  # ambiguous or absent: no clean cut
        return None
    return _strip_end(full[full.index(anchor) + len(anchor):])


def _strip_end(text: str) -> str:
    return strip_end_of_turn(text).rstrip()


def check_calls(render: RenderFn, template: str, messages: list[ChatMessage], parser: Any) -> list[str]:
    """Cut every assistant turn with calls out of the rendered history and parse it back with the run's
    parser: names and typed arguments must come back exactly, in order. The problems found (empty: all
    read back)."""
    from wtb_local.formats.parsers import parse_completion

    problems = []
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        names = ", ".join((c.get("function") or {}).get("name", "?") for c in calls)
        cut = cut_completion(render, template, messages, index, PROBE_TOOLS)
        # the cut must also be writable as a completion after the generation prompt (the oracle's reply)
        if cut is None or completion_after(cut[1], cut[0]) is None:
            problems.append(f"history turn {index} ({names}): no clean cut of the rendered turn")
            continue
        text = cut[0]
        parsed = parse_completion(parser, text, tools=PROBE_TOOLS, finish_reason="stop")
        want = [((c.get("function") or {}).get("name"), typed(_arguments(c))) for c in calls]
        got = [(c.name, typed(_json_or_text(c.arguments))) for c in parsed.tool_calls]
        if got != want:
            problems.append(f"history turn {index} ({names}) reads back with parser {parser.name} as "
                            f"{_shown(got)}, not {_shown(want)}")
        elif parsed.errors:
            problems.append(f"history turn {index} ({names}): parser {parser.name} reports {parsed.errors[0]}")
    return problems


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _shown(calls: Sequence[tuple[str | None, str]]) -> str:
    text = "; ".join(f"{name}({args})" for name, args in calls) or "no calls"
    return text if len(text) <= 300 else text[:297] + "..."


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


def _parser_for(parser: str | None, model_id: str, template: str, metadata: Any = None) -> Any:
    """The run's parser (`--parser`), else the one the run would select for this template; a checkpoint that
    declares its reply format (`metadata`, its response_template) is read by it where no parser knows it."""
    from wtb_local.formats.parsers import get_parser, select_parser
    from wtb_local.formats.parsers.response_template import METADATA_PARSERS  # deferred: start-up
    from wtb_local.formats.parsers.sglang_native import (  # deferred: start-up
        MIRRORS,
        is_sglang_parser,
        sglang_name,
    )
    from wtb_local.formats.parsers.vllm_native import is_vllm_parser, vllm_name  # deferred: start-up

    if is_vllm_parser(parser) or is_sglang_parser(parser):  # an engine's own parser: the probe reads with ours
        try:  # of that format, else with the one the template selects (the same format)
            return get_parser(MIRRORS.get(sglang_name(str(parser)), "") if is_sglang_parser(parser)
                              else vllm_name(str(parser)))
        except ValueError:
            parser = None
    try:
        try:
            name = parser or select_parser(model_id, chat_template=template)
        except ValueError:
            if metadata is None:
                raise
            name = "response_template"
        return get_parser(name, **({"response_template": metadata} if name in METADATA_PARSERS and metadata else {}))
    except ValueError as exc:  # no parser: past calls cannot be read back, so the template is not proven
        raise TemplateError(f"chat template probe of {model_id}: {exc}") from None


def _try(render: RenderFn, template: str, source: str, candidates: list[Adaptation], problems: list[str],
         parser: Any) -> Adaptation | None:
    messages = probe_messages()
    for adaptation in candidates:
        adapted = adapt_messages(messages, adaptation)
        try:
            text = render(template, adapted, PROBE_TOOLS)
            missing = check_rendered(text) or check_calls(render, template, adapted, parser)
        except RENDER_ERRORS as exc:  # a template failure is a finding, never a crash
            problems.append(f"{source} [{adaptation.label()}]: raised {type(exc).__name__}: {exc}")
            continue
        if not missing:
            return adaptation
        problems.append(f"{source} [{adaptation.label()}]: " + "; ".join(missing))
    return None


def choose_template(render: RenderFn, template: str, source: str, model_id: str,
                    parser: str | None = None, metadata: Any = None) -> tuple[str, TemplateChoice]:
    """Probe `template` (from `source`) and return the text to render with and the choice made.

    A variant passes when the rendered probe shows the tools, results and turns, and every past call cut
    out of it parses back (name and typed arguments) with the run's parser (`parser`, else the one selected
    for the model and template, else the checkpoint's declared format: `metadata`, its response_template).
    Order: the template with unsplit variants; for the tokenizer's own
    template the family override next (it keeps parallel calls in one message, as the model writes them);
    then split variants as a last resort. Raises TemplateError naming the problem and `--chat-template`
    when nothing passes.
    """
    problems: list[str] = []
    reader = _parser_for(parser, model_id, template, metadata)
    found = _try(render, template, source, variants(template, split=False), problems, reader)
    if found is not None:
        reason = "default adaptation passed the probe" if found == variants(template, split=False)[0] \
            else f"first passing adaptation: {found.label()}"
        return template, TemplateChoice(source=source, sha256=template_sha256(template), adaptation=found,
                                        reason=reason, problems=problems)
    override = override_for(model_id) if source == "tokenizer" else None
    if override is not None:
        text = override.text()
        label = f"override:{override.name}"
        found = _try(render, text, label, variants(text, split=False), problems,
                     _parser_for(parser, model_id, text, metadata))
        if found is not None:
            return text, TemplateChoice(
                source=label, sha256=template_sha256(text), adaptation=found, problems=problems,
                reason=f"{source} template failed the probe; family override {override.name} passed")
        raise TemplateError(f"chat template {source} of {model_id} and its override {override.name} both "
                            f"fail the probe: {_first(problems, label)}; pass --chat-template NAME|PATH")
    found = _try(render, template, source, variants(template, split=True), problems, reader)
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
