"""MiniCPM5 (openbmb/MiniCPM5-*) tool calls: XML elements, one per call, no wrapper,

    <function name="NAME"><param name="KEY">value</param><param name="CODE"><![CDATA[a < b]]></param></function>

Values are raw text (a value holding `<`, `&` or a newline is wrapped in CDATA, taken verbatim) typed by
the tool's schema, as for the other XML formats: strings stay as written, numbers, booleans, null,
objects and arrays are decoded once (the template writes non-strings with Python's `str`, so `True` and
`{'a': 1}` read too). Parallel calls follow each other, one per line. Reasoning: `<think>…</think>`.
"""

from __future__ import annotations

import re
from typing import Any

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.end_of_turn import strip_end_of_turn
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    arguments_object,
    coerce_arguments,
    dumps_arguments,
    is_truncated,
    join_content,
    split_reasoning,
)
from wtb_local.formats.parsers.base import ToolParser

FUNCTION_CLOSE, PARAM_CLOSE = "</function>", "</param>"
CDATA_OPEN, CDATA_CLOSE = "<![CDATA[", "]]>"
_FUNCTION = re.compile(r'<function\s+name="([^"]*)"\s*>')
_PARAM = re.compile(r'<param\s+name="([^"]*)"\s*>')


class _Cut(ValueError):
    """The text ended inside the call."""


def _read_params(text: str, i: int) -> tuple[dict[str, str], int, bool]:
    """The parameters of the function element whose body starts at `text[i]`, where it ends, and whether
    `</function>` closed it (the text may end after a complete parameter). Raises _Cut when the text ends
    inside a parameter, ValueError on other markup."""
    values: dict[str, str] = {}
    while True:
        j = i
        while j < len(text) and text[j] in " \t\r\n":
            j += 1
        if text.startswith(FUNCTION_CLOSE, j):
            return values, j + len(FUNCTION_CLOSE), True
        if j >= len(text):
            return values, len(text), False
        head = _PARAM.match(text, j)
        if head is None:
            tail = text[j:]
            if FUNCTION_CLOSE.startswith(tail) or ('<param name="'.startswith(tail[:13]) and ">" not in tail):
                raise _Cut("the call is cut off")
            raise ValueError(f"unexpected text in the function element: {text[j:j + 40]!r}")
        body = head.end()
        if text.startswith(CDATA_OPEN, body):
            end = text.find(CDATA_CLOSE, body)
            if end < 0:
                raise _Cut("a CDATA value is never closed")
            value = text[body + len(CDATA_OPEN):end]
            close = end + len(CDATA_CLOSE)
            if not text.startswith(PARAM_CLOSE, close):
                raise _Cut("no </param> after a CDATA value") if close >= len(text) else ValueError(
                    f"text after the CDATA value of {head.group(1)!r}")
        else:
            close = text.find(PARAM_CLOSE, body)
            if close < 0:
                raise _Cut(f"parameter {head.group(1)!r} is never closed")
            value = text[body:close]
        values[head.group(1)] = value
        i = close + len(PARAM_CLOSE)


class MiniCpm5Parser(ToolParser):
    name = "minicpm5"
    vllm_names = ("minicpm5",)
    families = ("MiniCPM5",)
    model_patterns = (r"minicpm-?5",)
    template_markers = ('<param name="',)
    # its template also splits content on `<tool_sep>`, Hy3's marker: `<param name="` is MiniCPM5's alone
    priority = 7

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_of_turn(text or "")
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"),
                                          call_markers=("<function name=",))
        pieces: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        pos = 0
        while True:
            head = _FUNCTION.search(rest, pos)
            if head is None:
                pieces.append(rest[pos:])
                break
            pieces.append(rest[pos:head.start()])
            name = head.group(1).strip()
            try:
                values, end, closed = _read_params(rest, head.end())
            except _Cut:
                if is_truncated(finish_reason):
                    errors.append(f"{TRUNCATED}: call {name} cut off at the token limit")
                    break
                close = rest.find(FUNCTION_CLOSE, head.end())
                end = close + len(FUNCTION_CLOSE) if close >= 0 else len(rest)
                calls.append(ParsedCall(name=name, arguments=rest[head.end():end].removesuffix(FUNCTION_CLOSE)))
                errors.append(f"call {name}: the function element is not complete; kept as raw text")
                pos = end
                continue
            except ValueError as exc:
                close = rest.find(FUNCTION_CLOSE, head.end())
                end = close + len(FUNCTION_CLOSE) if close >= 0 else len(rest)
                calls.append(ParsedCall(name=name, arguments=rest[head.end():end].removesuffix(FUNCTION_CLOSE)))
                errors.append(f"call {name}: {exc}; kept as raw text")
                pos = end
                continue
            if not closed and is_truncated(finish_reason):
                errors.append(f"{TRUNCATED}: call {name} cut off at the token limit")
                break
            if not name:
                errors.append("function element without a name")
            else:
                calls.append(ParsedCall(name=name, arguments=dumps_arguments(coerce_arguments(name, values, tools))))
                if not closed:
                    errors.append(f"call {name}: no {FUNCTION_CLOSE} (an unterminated block); call kept")
            pos = end
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"<think>\n{reasoning}\n</think>\n\n" if reasoning else ""
        elements = []
        for c in tool_calls:
            params = "".join(f'<param name="{k}">{_value(v)}</param>'
                             for k, v in (arguments_object(c.arguments) or {}).items())
            elements.append(f'<function name="{c.name}">{params}</function>')
        return head + "\n".join(([content] if content else []) + elements)


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else dumps_arguments(value)
    return f"{CDATA_OPEN}{text}{CDATA_CLOSE}" if any(ch in text for ch in "<&\n") else text
