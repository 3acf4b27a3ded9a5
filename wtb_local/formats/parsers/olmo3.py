"""Olmo 3 tool calls: Python-style calls, one per line, inside one block:

    <function_calls>get_weather(city='Paris', days=3)
    search(query="museums", filters={'open': True}, page=None)</function_calls>

Each line is one call read with `ast` (never evaluated); Python and JSON literals both read (`None`/`null`,
`True`/`true`). A line that is not a call is kept with its raw text and an error, and the other calls of
the block are kept (vLLM drops the bad sibling too, but silently). Reasoning (the Think models):
`<think>…</think>`. A block the reply never closes is read to the end, with an error.
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
    is_truncated,
    join_content,
    parse_pythonic_calls,
    pythonic_call_text,
    scan_blocks,
    split_reasoning,
)
from wtb_local.formats.parsers.base import ToolParser

OPEN, CLOSE = "<function_calls>", "</function_calls>"
_HEAD = re.compile(r"\s*([A-Za-z_][\w.]*)\s*\(")


def split_call_lines(body: str) -> list[str]:
    """The calls of a block: one per line, a line break inside brackets or quotes continuing the call."""
    lines: list[str] = []
    depth, quote, start, i = 0, "", 0, 0
    while i < len(body):
        ch = body[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
        elif ch == "\n" and depth == 0:
            lines.append(body[start:i])
            start = i + 1
        i += 1
    lines.append(body[start:])
    return [line.strip() for line in lines if line.strip()]


def read_block(body: str, where: str = OPEN) -> tuple[list[ParsedCall], list[str]]:
    """The calls of a block body, one per line; a line that is not a call is an error (`where` names the
    block), one that does not read keeps its name and raw arguments text."""
    calls: list[ParsedCall] = []
    errors: list[str] = []
    for line in split_call_lines(body):
        try:
            parsed = parse_pythonic_calls(line)
        except ValueError as exc:
            head = _HEAD.match(line)
            if head is None:
                errors.append(f"not a call in {where}: {line[:60]!r}")
                continue
            inner = line[head.end():].rstrip()
            calls.append(ParsedCall(name=head.group(1), arguments=inner.removesuffix(")")))
            errors.append(f"call {head.group(1)}: not a valid call ({exc}); arguments kept as raw text")
            continue
        calls += [ParsedCall(name=name, arguments=dumps_arguments(args)) for name, args in parsed]
    return calls, errors


class Olmo3Parser(ToolParser):
    name = "olmo3"
    vllm_names = ("olmo3",)
    families = ("Olmo 3 Instruct / Think",)
    model_patterns = (r"olmo-?3",)
    template_markers = ("<function_calls>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_of_turn(text or "")
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"), call_markers=(OPEN,))

        def read(start: int, errors: list[str]) -> Block:
            close = rest.find(CLOSE, start)
            nxt = rest.find(OPEN, start + len(OPEN))
            if close < 0 or 0 <= nxt < close:
                end = nxt if nxt >= 0 else len(rest)
                if is_truncated(finish_reason) and nxt < 0:
                    errors.append(f"{TRUNCATED}: {OPEN} block cut off at the token limit")
                    return Block([], end, stop=True)
                found, errs = read_block(rest[start + len(OPEN):end])
                errors += errs
                if found:
                    errors.append(f"no {CLOSE} after the calls (an unterminated block); calls kept")
                return Block(found, end, text="" if found else rest[start:end])
            found, errs = read_block(rest[start + len(OPEN):close])
            errors += errs
            return Block(found, close + len(CLOSE))

        pieces, calls, errors = scan_blocks(rest, OPEN, read)
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"<think>{reasoning}</think>\n" if reasoning else ""
        lines = []
        for c in tool_calls:
            args = arguments_object(c.arguments)
            lines.append(pythonic_call_text(c.name, args) if args is not None else f"{c.name}({c.arguments})")
        block = f"{OPEN}{chr(10).join(lines)}{CLOSE}" if lines else ""
        return head + "\n".join(p for p in (content, block) if p)
