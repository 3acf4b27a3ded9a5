"""DeepSeek's DSML tool calls (V3.2, V4, V4.1): one block of `invoke` elements whose parameters carry their
own type marker.

    <｜DSML｜function_calls>                                     (V4: tool_calls; V4.1: " calls")
    <｜DSML｜invoke name="NAME">
    <｜DSML｜parameter name="KEY" string="true">raw text</｜DSML｜parameter>
    <｜DSML｜parameter name="KEY" string="false">JSON</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

`string="true"` values are the string exactly as written; `string="false"` values are JSON. The marker is
the model's own statement of the type, so the tool schema never retypes a value (vLLM's serving parser
does; docs/parser-policies.md §3). The three generations differ only in tag names (V4.1 writes a space
after the marker): a block of another generation is not read as calls, as vLLM does not, but it is named
in an error and its text stays content (V4.1's `<｜DSML｜ tool_calls>`, V4's name with V4.1's space, is
V4.1's own, as vLLM reads it). ASCII look-alikes of the marker (`<|DSML|`, `<| DSML |`) are read
as the marker.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from wtb_local.contract.messages import JSONObject, ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    coerce_value,
    dumps_arguments,
    is_truncated,
    join_content,
    split_reasoning,
    tool_schemas,
)
from wtb_local.formats.parsers.hermes import strip_end_tokens

DSML = "｜DSML｜"
# `<｜DSML｜`, `</｜DSML｜` and their ASCII spellings, normalised before reading (vllm#30541).
_MARKER = re.compile(r"<(/?)\s*[｜|]\s*DSML\s*[｜|]")
# Every DSML block name, so a block of another generation is recognised as one.
_BLOCK_OPEN = re.compile(r"<" + DSML + r"\s*(function_calls|tool_calls|calls)\s*>")
_INVOKE_OPEN = re.compile(r"<" + DSML + r"\s*invoke\s+name\s*=\s*\"([^\"]*)\"\s*>")
_INVOKE_CLOSE = re.compile(r"</" + DSML + r"\s*invoke\s*>")
_PARAM_OPEN = re.compile(r"<" + DSML + r"\s*parameter\s+name\s*=\s*\"([^\"]*)\""
                         r"(?:\s+string\s*=\s*\"([^\"]*)\")?\s*>")
_PARAM_CLOSE = re.compile(r"</" + DSML + r"\s*parameter\s*>")
_ANY_INVOKE = re.compile(r"<" + DSML + r"\s*invoke\b")

_GENERATIONS = {"function_calls": "DeepSeek-V3.2", "tool_calls": "DeepSeek-V4", "calls": "DeepSeek-V4.1"}


@dataclass(frozen=True)
class Dialect:
    """The tag names of one generation. `space`: V4.1 writes a space between the marker and the name."""

    block: str
    space: bool = False

    def tag(self, name: str) -> str:
        return f"<{DSML}{' ' if self.space else ''}{name}"

    def close(self, name: str) -> str:
        return f"</{DSML}{' ' if self.space else ''}{name}>"

    @property
    def opener(self) -> str:
        return self.tag(self.block) + ">"


V32 = Dialect("function_calls")
V4 = Dialect("tool_calls")
V41 = Dialect("calls", space=True)


def normalise_markers(text: str) -> str:
    return _MARKER.sub(lambda m: f"<{m.group(1)}{DSML}", text)


def parse_dsml(text: str, dialect: Dialect, *, thinking: Any, tools: list[ToolSchema] | None,
               finish_reason: str | None) -> ParseResult:
    """Reasoning (`…</think>`), content and the calls of `dialect`'s blocks."""
    text = normalise_markers(strip_end_tokens(text or ""))
    reasoning, rest = split_reasoning(text, thinking=thinking, call_markers=(f"<{DSML}",))
    truncated = is_truncated(finish_reason)
    pieces: list[str] = []
    calls: list[ParsedCall] = []
    errors: list[str] = []
    pos = 0
    blocks = list(_BLOCK_OPEN.finditer(rest))
    for n, block in enumerate(blocks):
        if block.start() < pos:
            continue
        pieces.append(_take_bare(rest[pos:block.start()], dialect, tools, calls, errors))
        kind = block.group(1)
        close = re.compile(r"</" + DSML + r"\s*" + kind + r"\s*>").search(rest, block.end())
        nxt = blocks[n + 1].start() if n + 1 < len(blocks) else len(rest)
        closed = close is not None and close.start() < nxt
        end, after = (close.start(), close.end()) if closed and close is not None else (nxt, nxt)
        if kind != dialect.block and not _own_variant(dialect, block.group(0)):
            errors.append(f"a <{DSML}{kind}> block ({_GENERATIONS[kind]}'s) where this family writes "
                          f"{dialect.opener}: not read as calls")
            pieces.append(rest[block.start():after])
            pos = after
            continue
        cut = truncated and not closed and n == len(blocks) - 1
        found = parse_invokes(rest[block.end():end], tools, errors, cut=cut)
        calls += found
        if not found and not cut:  # nothing readable: the text stays for analysis
            pieces.append(rest[block.start():after])
        if not closed and found and not cut:
            errors.append(f"no {dialect.close(dialect.block)} (an unterminated block); calls kept")
        elif cut and TRUNCATED not in errors:
            errors.append(TRUNCATED)
        pos = after
    pieces.append(_take_bare(rest[pos:], dialect, tools, calls, errors))
    return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)


def _own_variant(dialect: Dialect, opener: str) -> bool:
    """V4.1 also writes V4's block name with its own spacing (`<｜DSML｜ tool_calls>`), and vLLM's V4.1 parser
    reads it; V4's unspaced `<｜DSML｜tool_calls>` stays another generation's block."""
    return dialect.space and opener == f"<{DSML} tool_calls>"


def _take_bare(text: str, dialect: Dialect, tools: list[ToolSchema] | None, calls: list[ParsedCall],
               errors: list[str]) -> str:
    """Text outside blocks, minus invokes written without their block (a model that skipped the opener):
    those are read as calls, with an error."""
    first = _ANY_INVOKE.search(text)
    if first is None:
        return text
    closes = list(_INVOKE_CLOSE.finditer(text, first.start()))
    end = closes[-1].end() if closes else len(text)
    found = parse_invokes(text[first.start():end], tools, errors, cut=False)
    if not found:
        return text
    calls += found
    errors.append(f"invoke outside a {dialect.opener} block; call(s) kept")
    return text[:first.start()] + text[end:]


def parse_invokes(block: str, tools: list[ToolSchema] | None, errors: list[str], *,
                  cut: bool) -> list[ParsedCall]:
    """The calls of a block's inside. `cut`: the block was cut at the token limit, so an invoke without its
    closing tag is dropped (reported once as truncated), never returned half-written."""
    schemas = tool_schemas(tools)
    calls: list[ParsedCall] = []
    heads = list(_INVOKE_OPEN.finditer(block))
    if not heads and block.strip() and not cut:
        errors.append(f"tool call block without an invoke: {block.strip()[:60]!r}")
    for n, head in enumerate(heads):
        limit = heads[n + 1].start() if n + 1 < len(heads) else len(block)
        close = _INVOKE_CLOSE.search(block, head.end(), limit)
        name = head.group(1).strip()
        if close is None and cut and n == len(heads) - 1:
            errors.append(TRUNCATED)
            break
        if not name:
            errors.append("invoke without a function name")
            continue
        body = block[head.end():close.start() if close else limit]
        props = schemas.get(name, {}).get("properties")
        args = _parameters(name, body, props if isinstance(props, dict) else {}, errors)
        calls.append(ParsedCall(name=name, arguments=dumps_arguments(args)))
        if close is None:
            errors.append(f"invoke {name!r} without its closing tag; call kept")
    return calls


def _parameters(name: str, body: str, props: JSONObject, errors: list[str]) -> JSONObject:
    args: JSONObject = {}
    heads = list(_PARAM_OPEN.finditer(body))
    for n, head in enumerate(heads):
        limit = heads[n + 1].start() if n + 1 < len(heads) else len(body)
        close = _PARAM_CLOSE.search(body, head.end(), limit)
        raw = body[head.end():close.start() if close else limit]
        key, marker = head.group(1), head.group(2)
        if close is None:
            raw = raw.rstrip()
            errors.append(f"call {name!r}: parameter {key!r} without its closing tag")
        if key in args:
            errors.append(f"call {name!r}: parameter {key!r} given twice; the last one is kept")
        args[key] = _value(name, key, raw, marker, props.get(key), errors)
    return args


def _value(name: str, key: str, raw: str, marker: str | None, schema: Any, errors: list[str]) -> Any:
    if marker == "true":
        return raw
    if marker == "false":
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            errors.append(f"call {name!r}: parameter {key!r} is marked string=\"false\" but is not JSON; "
                          "kept as text")
            return raw
    # no (or an unknown) marker: the schema is the only witness of the type
    return coerce_value(raw, schema if isinstance(schema, dict) else None)


def format_dsml(dialect: Dialect, content: str | None, tool_calls: list[ParsedCall],
                reasoning: str | None) -> str:
    """What the family writes: `reasoning</think>` (the prompt pre-fills `<think>`; written in full here),
    the content, then the block after a blank line, as the encoder renders an assistant turn."""
    head = f"<think>{reasoning}</think>" if reasoning is not None else ""
    if not tool_calls:
        return head + (content or "")
    invokes = []
    for call in tool_calls:
        try:
            args = json.loads(call.arguments)
        except ValueError:
            args = {}
        params = [
            f'{dialect.tag("parameter")} name="{k}" string="{"true" if isinstance(v, str) else "false"}">'
            f'{v if isinstance(v, str) else dumps_arguments(v)}{dialect.close("parameter")}'
            for k, v in (args.items() if isinstance(args, dict) else [])
        ]
        invokes.append(f'{dialect.tag("invoke")} name="{call.name}">\n' + "\n".join(params) + "\n"
                       + dialect.close("invoke"))
    block = f"{dialect.opener}\n" + "\n".join(invokes) + f"\n{dialect.close(dialect.block)}"
    return head + (content or "") + "\n\n" + block
