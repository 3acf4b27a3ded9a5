"""Cohere Command A / Command A Reasoning / Command R7B / Cohere2MoE ("North") replies:

    <|START_THINKING|>reasoning<|END_THINKING|>
    <|START_ACTION|>[
        {"tool_call_id": "0", "tool_name": "NAME", "parameters": {…}}
    ]<|END_ACTION|>
    <|START_TEXT|>answer<|END_TEXT|>                (Command A / R7B: <|START_RESPONSE|>…<|END_RESPONSE|>)

Citations `<co>text</co: 0:[1]>` are markup: the cited text stays, in the reasoning and the content.

The calls are one JSON list; each call keeps its `parameters` text as written and its `tool_call_id` as the
call's id. With reasoning on (the default) the generation prompt pre-fills `<|START_THINKING|>`, so a
completion starts inside the reasoning; with it off the prompt closes an empty block. vLLM names the
parser `cohere_command3` / `cohere_command4`; both names select this one.
"""

from __future__ import annotations

import json
import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    Block,
    arguments_object,
    decode_json_at,
    find_closing,
    is_truncated,
    join_content,
    object_member_spans,
    scan_blocks,
    skip_ws,
    split_reasoning,
)
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens

THINK_OPEN, THINK_CLOSE = "<|START_THINKING|>", "<|END_THINKING|>"
ACTION_OPEN, ACTION_CLOSE = "<|START_ACTION|>", "<|END_ACTION|>"
_TEXT_TAGS = re.compile(r"<\|(?:START|END)_(?:TEXT|RESPONSE)\|>")
# Citations (`<co>cited text</co: 0:[1,2]>`, Command A / Command 4) are markup around the cited text
_CITATION = re.compile(r"<co>|</co:[^>]*>")
_NAME = re.compile(r'"tool_name"\s*:\s*"((?:[^"\\]|\\.)*)"')


class CohereCommandParser(ToolParser):
    name = "cohere_command"
    vllm_names: ClassVar[tuple[str, ...]] = ("cohere_command3", "cohere_command4")
    families = ("Command A", "Command A Reasoning", "Command R7B", "Cohere2MoE (North)", "Command 4")
    model_patterns = (r"command-a", r"command-r7b", r"cohere2", r"north-(?:mini-)?code")
    template_markers = ("<|START_ACTION|>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "")
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"), open_tag=THINK_OPEN,
                                          close_tag=THINK_CLOSE, call_markers=(ACTION_OPEN,))

        def read(start: int, errors: list[str]) -> Block:
            end = rest.find(ACTION_CLOSE, start)
            region = rest[start + len(ACTION_OPEN):end if end >= 0 else len(rest)]
            found = _actions(region, closed=end >= 0, truncated=is_truncated(finish_reason), errors=errors)
            pos = end + len(ACTION_CLOSE) if end >= 0 else len(rest)
            if not found and errors[-1:] != [TRUNCATED]:
                return Block([], pos, text=rest[start:pos])  # nothing readable: the text stays for analysis
            if found and end < 0 and not is_truncated(finish_reason):
                errors.append(f"no {ACTION_CLOSE} (an unterminated action); calls kept")
            return Block(found, pos)

        pieces, calls, errors = scan_blocks(rest, ACTION_OPEN, read)
        content = join_content(_CITATION.sub("", _TEXT_TAGS.sub("", piece)) for piece in pieces)
        reasoning = join_content([_CITATION.sub("", reasoning)]) if reasoning else reasoning
        return ParseResult(reasoning=reasoning, content=content, tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"{THINK_OPEN}{reasoning}{THINK_CLOSE}" if reasoning is not None else ""
        text = f"<|START_TEXT|>{content}<|END_TEXT|>" if content else ""
        if not tool_calls:
            return head + text
        items = ",".join(
            f'\n    {{"tool_call_id": "{n}", "tool_name": {json.dumps(c.name, ensure_ascii=False)}, '
            f'"parameters": {c.arguments if arguments_object(c.arguments) is not None else "{}"}}}'
            for n, c in enumerate(tool_calls))
        return head + text + f"{ACTION_OPEN}[{items}\n]{ACTION_CLOSE}"


def _actions(region: str, *, closed: bool, truncated: bool, errors: list[str]) -> list[ParsedCall]:
    """The calls of one action's JSON list; a broken item keeps its name and raw parameters, with an error."""
    i = skip_ws(region, 0)
    if i < len(region) and region[i] == "{":
        errors.append("a call object instead of a list after <|START_ACTION|>")
        return _items(region, i, closed=closed, truncated=truncated, errors=errors, single=True)
    if i >= len(region) or region[i] != "[":
        errors.append(TRUNCATED if truncated and not closed else "no JSON call list after <|START_ACTION|>")
        return []
    return _items(region, i + 1, closed=closed, truncated=truncated, errors=errors, single=False)


def _items(region: str, i: int, *, closed: bool, truncated: bool, errors: list[str],
           single: bool) -> list[ParsedCall]:
    calls: list[ParsedCall] = []
    while True:
        i = skip_ws(region, i)
        if i >= len(region):
            errors.append(TRUNCATED if truncated else "the call list is never closed")
            return calls
        if region[i] == "]":
            return calls
        if region[i] != "{":
            errors.append(f"unexpected {region[i]!r} in the call list")
            return calls
        end = find_closing(region, i)
        if end < 0:
            if truncated:
                errors.append(TRUNCATED)
                return calls
            salvaged = _salvage(region[i:])
            if salvaged is not None:
                calls.append(salvaged)
            errors.append("a call object is never closed" + ("; call kept" if salvaged else ""))
            return calls
        call = _call(region, i, errors)
        if call is not None:
            calls.append(call)
        i = skip_ws(region, end)
        if single:
            return calls
        if i < len(region) and region[i] == ",":
            i += 1


def _call(region: str, i: int, errors: list[str]) -> ParsedCall | None:
    decoded = decode_json_at(region, i)
    if decoded is None:
        salvaged = _salvage(region[i:find_closing(region, i)])
        errors.append("a call object is not valid JSON" + ("; arguments kept as raw text" if salvaged else ""))
        return salvaged
    value, _ = decoded
    name = value.get("tool_name") if isinstance(value, dict) else None
    if not isinstance(name, str) or not name.strip():
        errors.append(f"a call object without a tool_name: {region[i:i + 60]!r}")
        return None
    spans = object_member_spans(region, i) or {}
    call_id = value.get("tool_call_id")
    if "parameters" in spans:
        raw = region[spans["parameters"][0]:spans["parameters"][1]]
    else:
        raw = "{}"
    call = ParsedCall(id=str(call_id) if call_id is not None else None, name=name, arguments=raw)
    if arguments_object(raw) is None:
        errors.append(f"parameters of {name} are not a JSON object")
    return call


def _salvage(fragment: str) -> ParsedCall | None:
    name = _NAME.search(fragment)
    if name is None:
        return None
    key = re.search(r'"parameters"\s*:\s*', fragment)
    raw = fragment[key.end():].rstrip().removesuffix("}").rstrip() if key else ""
    return ParsedCall(name=name.group(1), arguments=raw)
