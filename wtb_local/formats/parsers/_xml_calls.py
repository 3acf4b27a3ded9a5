"""Reading XML-style calls whose argument values are raw text typed by the tool schema.

Shared by Qwen3-Coder / Seed-OSS (`<function=NAME><parameter=KEY>value</parameter></function>`) and
MiniMax-M2 (`<invoke name="NAME"><parameter name="KEY">value</parameter></invoke>`). Values keep their
whitespace (only the one newline the template puts on each side of a value is markup); a parameter that
is never closed ends at the next parameter or at the end of the function, as upstream parsers allow.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall
from wtb_local.formats.parsers._common import TRUNCATED, coerce_arguments, dumps_arguments


@dataclass(frozen=True)
class XmlSyntax:
    """Tag shapes of one family. `function_open` captures the name; `param_open` captures the key."""

    function_open: re.Pattern[str]
    function_close: str
    param_open: re.Pattern[str]
    param_close: str = "</parameter>"
    # Qwen3-Coder wraps each value in newlines (layout, not data); Seed writes values inline but shares
    # the syntax, so a wrapping newline it adds is layout too. MiniMax values are kept byte for byte.
    strip_one_newline: bool = True


@dataclass
class XmlScan:
    """Calls and errors read from one call wrapper."""

    calls: list[ParsedCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _unwrap(value: str, strip_one_newline: bool) -> str:
    if strip_one_newline:
        value = value.removeprefix("\n").removesuffix("\n")
    return value


def parse_functions(block: str, syntax: XmlSyntax, tools: list[ToolSchema] | None, *,
                    block_closed: bool, truncated: bool) -> XmlScan:
    """Every function element in `block` (the inside of one call wrapper) as calls.

    `block_closed`: the wrapper's closing tag was seen; an unclosed last function in an unclosed block of
    a cut-off reply is reported as truncated instead of being returned half-written."""
    scan = XmlScan()
    opens = list(syntax.function_open.finditer(block))
    if not opens:
        scan.errors.append(f"tool call without a function: {block.strip()[:60]!r}")
        return scan
    for n, head in enumerate(opens):
        limit = opens[n + 1].start() if n + 1 < len(opens) else len(block)
        close = block.find(syntax.function_close, head.end(), limit)
        name = head.group(1).strip()
        if close < 0 and truncated and not block_closed and n == len(opens) - 1:
            scan.errors.append(TRUNCATED)
            break
        if not name:
            scan.errors.append("function tag without a name")
            continue
        body = block[head.end():close if close >= 0 else limit]
        raw_values = parse_parameters(body, syntax)
        scan.calls.append(ParsedCall(name=name, arguments=dumps_arguments(coerce_arguments(name, raw_values, tools))))
    return scan


def parse_parameters(body: str, syntax: XmlSyntax) -> dict[str, str]:
    """KEY → raw value text of each parameter element in a function body (a later duplicate wins)."""
    values: dict[str, str] = {}
    heads = list(syntax.param_open.finditer(body))
    for n, head in enumerate(heads):
        limit = heads[n + 1].start() if n + 1 < len(heads) else len(body)
        close = body.find(syntax.param_close, head.end(), limit)
        raw = body[head.end():close if close >= 0 else limit]
        if close < 0:  # implicitly closed: the whitespace before the next tag is layout
            raw = raw.rstrip(" \t\r\n")
        values[head.group(1).strip()] = _unwrap(raw, syntax.strip_one_newline)
    return values


def format_value(value: Any) -> str:
    """How these templates write a value: strings as they are, everything else as JSON."""
    return value if isinstance(value, str) else dumps_arguments(value)


def iter_blocks(text: str, open_tag: str, close_tag: str, bare_open: str | None = None,
                bare_close: str | None = None) -> list[tuple[int, int, int, int, bool]]:
    """Call wrappers in `text`: (start, inner_start, inner_end, end, closed) per `open_tag…close_tag`.

    A wrapper that never closes ends at the next wrapper or at the end of the text. With `bare_open`, a
    function element written without its wrapper (`<function=…>…</function>`) counts as a call too."""
    blocks: list[tuple[int, int, int, int, bool]] = []
    pos = 0
    while pos < len(text):
        start = text.find(open_tag, pos)
        bare = text.find(bare_open, pos) if bare_open else -1
        if bare >= 0 and (start < 0 or bare < start):
            close = text.find(bare_close, bare) if bare_close else -1
            end = close + len(bare_close) if bare_close and close >= 0 else len(text)
            blocks.append((bare, bare, end, end, close >= 0))
            pos = end
            continue
        if start < 0:
            break
        inner = start + len(open_tag)
        close = text.find(close_tag, inner)
        nxt = text.find(open_tag, inner)
        if close < 0 or 0 <= nxt < close:
            end = nxt if nxt >= 0 else len(text)
            blocks.append((start, inner, end, end, False))
            pos = end
            continue
        blocks.append((start, inner, close, close + len(close_tag), True))
        pos = close + len(close_tag)
    return blocks


def parse_wrapped_calls(text: str, tools: list[ToolSchema] | None, finish_reason: str | None, *,
                        open_tag: str, close_tag: str, syntax: XmlSyntax, bare_open: str | None = None,
                        bare_close: str | None = None,
                        json_fallback: Callable[[str], list[ParsedCall] | None] | None = None,
                        ) -> tuple[list[str], list[ParsedCall], list[str]]:
    """(content pieces, calls, errors) of a text whose calls sit in `open_tag…close_tag` wrappers.

    `json_fallback` reads a wrapper holding a JSON call object instead of XML (models of these families
    sometimes fall back to the Hermes JSON layout inside the same wrapper)."""
    pieces: list[str] = []
    calls: list[ParsedCall] = []
    errors: list[str] = []
    blocks = iter_blocks(text, open_tag, close_tag, bare_open, bare_close)
    pos = 0
    for n, (start, inner_start, inner_end, end, closed) in enumerate(blocks):
        pieces.append(text[pos:start])
        pos = end
        last = n == len(blocks) - 1
        inner = text[inner_start:inner_end]
        if json_fallback and closed and inner.lstrip().startswith("{"):
            found = json_fallback(inner)
            if found:
                calls += found
                continue
        scan = parse_functions(inner, syntax, tools, block_closed=closed,
                               truncated=finish_reason == "length" and last)
        calls += scan.calls
        errors += scan.errors
        if not closed and scan.calls and TRUNCATED not in scan.errors:
            # complete calls are kept; a cut-off reply may have lost further calls of the block
            errors.append(TRUNCATED if finish_reason == "length" and last else f"unclosed {open_tag} block")
    pieces.append(text[pos:])
    return pieces, calls, errors
