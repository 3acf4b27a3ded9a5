"""LFM2 / LFM2.5 (Liquid AI) tool calls: a Python-style call list between two tokens,

    <|tool_call_start|>[get_weather(city="Paris"), Calendar.create_event(title='demo', reminder=True)]<|tool_call_end|>

read with `ast` (never evaluated): Python and JSON literals both read, dotted names are names. The list
closes itself, so a missing `<|tool_call_end|>` after a closed list is no error (as for the JSON-list
formats); a list that cannot be read keeps each call's name and raw arguments text with an error.
Reasoning (LFM2.5 thinking models): `<think>…</think>`.
"""

from __future__ import annotations

import re

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.end_of_turn import strip_end_of_turn
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    Block,
    arguments_object,
    dumps_arguments,
    find_closing,
    is_truncated,
    join_content,
    parse_pythonic_calls,
    pythonic_call_text,
    scan_blocks,
    skip_ws,
    split_reasoning,
)
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.olmo3 import read_block

OPEN, CLOSE = "<|tool_call_start|>", "<|tool_call_end|>"
_LIST_ITEM = re.compile(r"\s*,?\s*([A-Za-z_][\w.]*)\s*\(")


def _split_items(inner: str) -> str:
    """The calls of a list that does not parse as a whole, one per line, for reading one by one."""
    lines = []
    i = 0
    while i < len(inner):
        head = _LIST_ITEM.match(inner, i)
        if head is None:
            lines.append(inner[i:].strip())
            break
        end = find_closing(inner, head.end() - 1)
        if end < 0:
            lines.append(inner[head.start():].strip(" ,"))
            break
        lines.append(inner[head.start():end].strip(" ,"))
        i = end
    return "\n".join(line.replace("\n", " ") for line in lines if line)


def read_call_list(text: str, i: int, finish_reason: str | None) -> tuple[list[ParsedCall], list[str], int]:
    """The calls after `OPEN` at `text[i]`: a `[...]` list (or one bare call), errors, and its end."""
    j = skip_ws(text, i)
    close_token = text.find(CLOSE, j)
    if j < len(text) and text[j] == "[":
        end = find_closing(text, j)
    elif re.match(r"[A-Za-z_][\w.]*\s*\(", text[j:]):
        end = find_closing(text, text.index("(", j))
    else:
        end = -1
    if end < 0:
        stop = close_token if close_token >= 0 else len(text)
        if close_token < 0 and is_truncated(finish_reason):
            return [], [f"{TRUNCATED}: call list cut off at the token limit"], len(text)
        source = text[j:stop].strip()
        inner = source.removeprefix("[")
        calls, errors = read_block(_split_items(inner.rstrip("]")), OPEN)
        return calls, [*errors, f"the call list after {OPEN} is not valid: {source[:60]!r}"], stop
    source = text[j:end]
    try:
        parsed = parse_pythonic_calls(source)
    except ValueError as exc:
        inner = source[1:-1] if source.startswith("[") else source
        calls, errors = read_block(_split_items(inner), OPEN)
        return calls, [*errors, f"the call list after {OPEN} is not valid ({exc})"], end
    return [ParsedCall(name=name, arguments=dumps_arguments(args)) for name, args in parsed], [], end


class Lfm2Parser(ToolParser):
    name = "lfm2"
    vllm_names = ("lfm2",)
    families = ("LFM2", "LFM2.5")
    model_patterns = (r"lfm-?2",)
    template_markers = ("<|tool_call_start|>", "<|tool_list_start|>", "List of tools: [")

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_of_turn(text or "")
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"), call_markers=(OPEN,))

        def read(start: int, errors: list[str]) -> Block:
            found, errs, end = read_call_list(rest, start + len(OPEN), finish_reason)
            errors += errs
            after = skip_ws(rest, end)
            return Block(found, after + len(CLOSE) if rest.startswith(CLOSE, after) else end)

        pieces, calls, errors = scan_blocks(rest, OPEN, read)
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"<think>{reasoning}</think>" if reasoning else ""
        items = []
        for c in tool_calls:
            args = arguments_object(c.arguments)
            items.append(pythonic_call_text(c.name, args) if args is not None else f"{c.name}({c.arguments})")
        calls = f"{OPEN}[{', '.join(items)}]{CLOSE}" if tool_calls else ""
        return head + (content or "") + calls
