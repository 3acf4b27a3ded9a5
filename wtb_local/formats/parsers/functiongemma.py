"""FunctionGemma (google/functiongemma-270m-it) tool calls:

    <start_function_call>call:NAME{key:<escape>value<escape>,n:<escape>42<escape>}<end_function_call>

Gemma's object syntax (`_gemma_calls`) with `<escape>` as the string delimiter. The model wraps every
value in `<escape>`, numbers and booleans included, so a top-level value is typed by the tool's schema
when the offered tools declare its parameter, and otherwise read as vLLM does: numeric and boolean text
become numbers and booleans, anything else stays a string. Pairs without a comma between them still read.
Parallel calls are concatenated blocks. No reasoning block is documented for this model.
"""

from __future__ import annotations

import re
from typing import Any

from wtb_local.contract.messages import JSONObject, ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.end_of_turn import strip_end_of_turn
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    arguments_object,
    coerce_value,
    dumps_arguments,
    is_truncated,
    join_content,
    tool_schemas,
)
from wtb_local.formats.parsers._gemma_calls import GemmaArgs, Unreadable
from wtb_local.formats.parsers.base import ToolParser

OPEN, CLOSE = "<start_function_call>", "<end_function_call>"
ARGS = GemmaArgs(delimiters=("<escape>",))
_CALL = re.compile(re.escape(OPEN) + r"\s*(?:call:)?")
_NUMBER = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")


def _untyped(value: Any) -> Any:
    """vLLM's reading of an escaped value without a schema: numeric and boolean text become typed."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if _NUMBER.fullmatch(text):
        return int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
    return value


def typed_arguments(name: str, arguments: JSONObject, tools: list[ToolSchema] | None) -> JSONObject:
    props = tool_schemas(tools).get(name, {}).get("properties")
    props = props if isinstance(props, dict) else {}
    out = {}
    for key, value in arguments.items():
        schema = props.get(key)
        if isinstance(value, str) and isinstance(schema, dict):
            out[key] = coerce_value(value, schema)
        else:
            out[key] = _untyped(value)
    return out


class FunctionGemmaParser(ToolParser):
    name = "functiongemma"
    vllm_names = ("functiongemma",)
    families = ("FunctionGemma (functiongemma-270m-it)",)
    model_patterns = (r"functiongemma", r"function-gemma")
    template_markers = ("<start_function_call>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_of_turn(text or "")
        pieces: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        pos = 0
        while True:
            found = _CALL.search(text, pos)
            if found is None:
                pieces.append(text[pos:])
                break
            pieces.append(text[pos:found.start()])
            close = text.find(CLOSE, found.end())
            try:
                read = ARGS.read_call(text, found.end())
            except Unreadable as exc:
                end = close if close >= 0 else len(text)
                if close < 0 and exc.cut and is_truncated(finish_reason):
                    errors.append(f"{TRUNCATED}: call cut off at the token limit")
                    break
                name = re.match(r"[A-Za-z_][\w.\-]*", text[found.end():end])
                if name is None:
                    errors.append(f"tool call without a function name: {text[found.start():end][:60]!r}")
                    pieces.append(text[found.start():end])
                else:
                    calls.append(ParsedCall(name=name.group(0),
                                            arguments=text[found.end() + name.end():end].strip()))
                    errors.append(f"call {name.group(0)}: arguments cannot be read ({exc}); kept as raw text")
                pos = end + len(CLOSE) if close >= 0 else end
                continue
            args = typed_arguments(read.name, read.arguments, tools)
            calls.append(ParsedCall(name=read.name, arguments=dumps_arguments(args)))
            errors += [e if e.startswith("call ") else f"call {read.name}: {e}" for e in read.errors]
            after = read.end
            while after < len(text) and text[after] in " \t\r\n":
                after += 1
            if text.startswith(CLOSE, after):
                pos = after + len(CLOSE)
            else:
                pos = read.end
                errors.append(f"call {read.name}: no {CLOSE} after the call (an unterminated block); call kept")
        return ParseResult(content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        blocks = []
        for c in tool_calls:
            args = arguments_object(c.arguments)
            body = ARGS.write_value(args) if args is not None else "{" + c.arguments + "}"
            blocks.append(f"{OPEN}call:{c.name}{body}{CLOSE}")
        return (content or "") + "".join(blocks)
