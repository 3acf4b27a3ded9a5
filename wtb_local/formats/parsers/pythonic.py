"""Pythonic call lists: `[get_weather(city='SF'), search(q="x", n=3)]`.

Llama-3.2/3.3 with the pythonic prompt, ToolACE-2-8B, watt-tool-8B/70B, Gemma-3 (prompted) and Llama-4
(optionally wrapped in `<|python_start|>…<|python_end|>`). Lists are found anywhere in the reply (prose
around them is content) and read with `ast`, never evaluated. Argument text is `dumps_arguments` of the
literal values (docs/evaluation.md §5: the format is not JSON).
"""

from __future__ import annotations

import json
import re

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    dumps_arguments,
    find_closing,
    is_truncated,
    join_content,
    parse_pythonic_calls,
    pythonic_call_text,
)
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens

_WRAPPERS = ("<|python_start|>", "<|python_end|>", "<|python_tag|>")
# `[name(` (dotted names allowed): the start of a call list, as opposed to a bracket in prose.
_LIST_START = re.compile(r"\[\s*([A-Za-z_][\w.]*)\s*\(")


class PythonicParser(ToolParser):
    name = "pythonic"
    vllm_names = ("pythonic", "llama4_pythonic")
    families = (
        "Llama-3.2/3.3 (pythonic prompt)",
        "ToolACE-2-8B",
        "watt-tool-8B/70B",
        "Gemma-3 (prompted)",
        "Llama-4",
    )
    model_patterns = (r"toolace", r"watt-tool", r"llama-4", r"llama4", r"gemma-3", r"gemma3")
    template_markers = ("[func_name1(",)
    priority = 0

    def parse(
        self, text: str, *, tools: list[ToolSchema] | None = None, finish_reason: str | None = None
    ) -> ParseResult:
        text = strip_end_tokens(text or "")
        content: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        pos = 0
        for match in _LIST_START.finditer(text):
            start = match.start()
            if start < pos:
                continue
            end = find_closing(text, start)
            nxt = _LIST_START.search(text, match.end()) if end < 0 else None
            if nxt is not None:  # a broken list (e.g. an unmatched quote) before another call list
                content.append(text[pos:start])
                errors.append(f"call list starting with {match.group(1)}( is not valid (never closed)")
                calls.append(
                    ParsedCall(name=match.group(1), arguments=text[match.end() : nxt.start()].strip())
                )
                pos = nxt.start()
                continue
            if end < 0:
                content.append(text[pos:start])
                pos = len(text)
                if is_truncated(finish_reason):
                    errors.append(f"{TRUNCATED}: call list cut off at the token limit")
                else:
                    errors.append(f"call list starting with {match.group(1)}( is never closed")
                    calls.append(ParsedCall(name=match.group(1), arguments=text[match.end() :].strip()))
                break
            try:
                parsed = parse_pythonic_calls(text[start:end])
            except ValueError as exc:
                content.append(text[pos:start])
                errors.append(f"call list starting with {match.group(1)}( is not valid: {exc}")
                calls.append(ParsedCall(name=match.group(1), arguments=_inner_arguments(text, match.end())))
                pos = end
                continue
            content.append(text[pos:start])
            calls += [ParsedCall(name=name, arguments=dumps_arguments(args)) for name, args in parsed]
            pos = end
        else:
            content.append(text[pos:])
        cleaned = []
        for piece in content:
            for token in _WRAPPERS:
                piece = piece.replace(token, "")
            cleaned.append(piece)
        return ParseResult(content=join_content(cleaned), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        body = ""
        if tool_calls:
            items = []
            for c in tool_calls:
                try:
                    args = json.loads(c.arguments)
                except ValueError:
                    args = None
                items.append(
                    pythonic_call_text(c.name, args) if isinstance(args, dict) else f"{c.name}({c.arguments})"
                )
            body = "[" + ", ".join(items) + "]"
        if content and body:
            return f"{content}\n{body}"
        return content or body


def _inner_arguments(text: str, open_paren_end: int) -> str:
    """The raw text between a call's parentheses (best effort, for a call that did not parse)."""
    close = find_closing(text, open_paren_end - 1)
    return text[open_paren_end : close - 1].strip() if close > 0 else text[open_paren_end:].strip()
