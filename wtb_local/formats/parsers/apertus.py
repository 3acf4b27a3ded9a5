"""Apertus (swiss-ai/Apertus-8B/70B-Instruct-2509) tool calls: a JSON list of one-key objects, the key
being the function name:

    <|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"search": {"query": "x"}}]<|tools_suffix|>

Arguments keep their JSON text as written. Reasoning: `<|inner_prefix|>…<|inner_suffix|>`. A list whose
`<|tools_suffix|>` never comes still reads (as vLLM's parser does); one the token limit cut is an error.
An item that is not a one-key object holding an object is an error; the other items are kept.
"""

from __future__ import annotations

import json
import re
from typing import Any

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.end_of_turn import strip_end_of_turn
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    Block,
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

OPEN, CLOSE = "<|tools_prefix|>", "<|tools_suffix|>"
THINK_OPEN, THINK_CLOSE = "<|inner_prefix|>", "<|inner_suffix|>"


def _item_call(text: str, start: int, value: Any) -> tuple[ParsedCall | None, str | None]:
    if not isinstance(value, dict) or len(value) != 1:
        return None, f"tool call item is not a one-key object: {text[start:start + 60]!r}"
    name, args = next(iter(value.items()))
    spans = object_member_spans(text, start) or {}
    raw = text[spans[name][0]:spans[name][1]] if name in spans else json.dumps(args, ensure_ascii=False)
    if not isinstance(args, dict):
        return ParsedCall(name=name, arguments=raw), f"arguments of {name} are not a JSON object"
    return ParsedCall(name=name, arguments=raw), None


_KEY = re.compile(r'\{\s*"((?:[^"\\]|\\.)*)"\s*:\s*')


def _salvage(fragment: str) -> ParsedCall | None:
    """Name and raw arguments text of an item that is not valid JSON (None without a name)."""
    key = _KEY.match(fragment)
    if key is None:
        return None
    try:
        name = json.loads(f'"{key.group(1)}"')
    except ValueError:
        name = key.group(1)
    raw = fragment[key.end():].rstrip()
    if raw.endswith("}") and raw.count("}") > raw.count("{"):
        raw = raw[:-1].rstrip()  # the item's own closing brace
    return ParsedCall(name=name, arguments=raw) if name.strip() else None


def read_list(text: str, i: int, finish_reason: str | None) -> tuple[list[ParsedCall], list[str], int]:
    """The calls of the list whose `[` is at `text[i]`, the errors, and where the list ended."""
    calls: list[ParsedCall] = []
    errors: list[str] = []
    j = skip_ws(text, i + 1)
    while j < len(text) and text[j] != "]":
        item = decode_json_at(text, j)
        if item is None:
            closing = find_closing(text, j) if text[j] == "{" else -1
            if closing < 0 and is_truncated(finish_reason):
                return calls, [*errors, f"{TRUNCATED}: call list cut off at the token limit"], len(text)
            end = closing if closing > 0 else len(text)
            salvaged = _salvage(text[j:end])
            if salvaged is not None:
                calls.append(salvaged)
            errors.append(f"tool call item is not valid JSON: {text[j:j + 60]!r}"
                          + ("; arguments kept as raw text" if salvaged else ""))
            if closing < 0:
                return calls, errors, len(text)
            j = skip_ws(text, closing)
            if j < len(text) and text[j] == ",":
                j = skip_ws(text, j + 1)
            continue
        value, end = item
        call, error = _item_call(text, skip_ws(text, j), value)
        if call is not None:
            calls.append(call)
        if error:
            errors.append(error)
        j = skip_ws(text, end)
        if j < len(text) and text[j] == ",":
            j = skip_ws(text, j + 1)
    if j >= len(text):
        if is_truncated(finish_reason):
            return calls, [*errors, f"{TRUNCATED}: call list cut off at the token limit"], len(text)
        errors.append("the tool call list is never closed")
        return calls, errors, len(text)
    return calls, errors, j + 1


class ApertusParser(ToolParser):
    name = "apertus"
    vllm_names = ("apertus",)
    families = ("Apertus-8B/70B-Instruct-2509",)
    model_patterns = (r"apertus",)
    template_markers = ("<|tools_prefix|>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_of_turn(text or "")
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"), open_tag=THINK_OPEN,
                                          close_tag=THINK_CLOSE, call_markers=(OPEN,))

        def read(start: int, errors: list[str]) -> Block:
            j = skip_ws(rest, start + len(OPEN))
            if j >= len(rest):
                errors.append(f"{TRUNCATED}: nothing after {OPEN}" if is_truncated(finish_reason)
                              else f"no call list after {OPEN}")
                return Block([], len(rest))
            if rest[j] != "[":
                end = rest.find(CLOSE, j)
                end = end if end >= 0 else len(rest)
                errors.append(f"no call list after {OPEN}: {rest[j:end][:60]!r}")
                return Block([], end + len(CLOSE) if rest.startswith(CLOSE, end) else end, text=rest[start:end])
            found, errs, end = read_list(rest, j, finish_reason)
            errors += errs
            after = skip_ws(rest, end)
            return Block(found, after + len(CLOSE) if rest.startswith(CLOSE, after) else end)

        pieces, calls, errors = scan_blocks(rest, OPEN, read)
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"{THINK_OPEN}{reasoning}{THINK_CLOSE}" if reasoning else ""
        items = ", ".join(f"{{{json.dumps(c.name, ensure_ascii=False)}: {c.arguments}}}" for c in tool_calls)
        calls = f"{OPEN}[{items}]{CLOSE}" if tool_calls else ""
        return head + (content or "") + calls
