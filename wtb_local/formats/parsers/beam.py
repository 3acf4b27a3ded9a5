"""Beam (vLLM and SGLang `beam`, driven by the checkpoint's response template): a Harmony-like message layout,

    <|channel|>analysis<|message|>REASONING<|end|><|start|>assistant
     to=NAME<|channel|>analysis <|constrain|>xml<|message|><rfl:parameter name="KEY">
    VALUE
    </rfl:parameter><|call|>
    <|channel|>final<|message|>ANSWER<|return|>

The prompt ends with `<|start|>assistant`, so the reply's first message has no header. Messages are split at
`<|start|>assistant`; an analysis message is reasoning, a ` to=NAME` message a call, a final message (or text
with no header) content. A call closes with `<|call|>` or `<|end|>`; a parameter closes with
`</rfl:parameter>` or where the next one opens, and the newline on each side of a value is markup. Values
are text typed by the tool schema (the response template constrains them to it). The checkpoint id is not
public: `beam` ids select it.
"""

from __future__ import annotations

import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    arguments_object,
    coerce_arguments,
    dumps_arguments,
    is_truncated,
    join_content,
)
from wtb_local.formats.parsers._xml_calls import XmlSyntax, format_value, parse_parameters
from wtb_local.formats.parsers.base import ToolParser

START = "<|start|>assistant"
ANALYSIS, FINAL = "<|channel|>analysis<|message|>", "<|channel|>final<|message|>"
_CALL_HEAD = re.compile(r"\s?to=(?P<name>[^\s<]+)<\|channel\|>analysis <\|constrain\|>xml<\|message\|>")
_CLOSERS = re.compile(r"<\|call\|>|<\|end\|>|<\|return\|>")
_PARAMS = XmlSyntax(function_open=re.compile(r"(?!)"), function_close="",
                    param_open=re.compile(r'<rfl:parameter name="([^"]+)">'), param_close="</rfl:parameter>")


class BeamParser(ToolParser):
    name = "beam"
    vllm_names: ClassVar[tuple[str, ...]] = ("beam",)
    families = ("Beam",)
    model_patterns = (r"(^|/)beam-",)
    template_markers = ("<rfl:parameter",)
    priority = 2

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        reasoning: list[str] = []
        pieces: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        messages = (text or "").split(START)
        for n, message in enumerate(messages):
            if message.lstrip().startswith(ANALYSIS):  # reasoning runs to <|end|> only
                body = message[message.index(ANALYSIS) + len(ANALYSIS):]
                end = body.find("<|end|>")
                reasoning.append(body if end < 0 else body[:end])
                message = "" if end < 0 else body[end + len("<|end|>"):]
            cut = is_truncated(finish_reason) and n == len(messages) - 1
            self._read(message, tools, cut, pieces, calls, errors)
        joined = "\n".join(r.strip() for r in reasoning if r.strip())
        return ParseResult(reasoning=joined or None, content=join_content(pieces), tool_calls=calls, errors=errors)

    @staticmethod
    def _read(message: str, tools: list[ToolSchema] | None, cut: bool, pieces: list[str],
              calls: list[ParsedCall], errors: list[str]) -> None:
        """Content and calls of one message that is not reasoning: text (a final channel's header and
        closers are markup), and every ` to=NAME` call head in it, each call ending at its closer."""
        pos = 0
        while (head := _CALL_HEAD.search(message, pos)) is not None:
            pieces.append(_CLOSERS.sub("", message[pos:head.start()]).replace(FINAL, ""))
            closer = _CLOSERS.search(message, head.end())
            nxt = _CALL_HEAD.search(message, head.end())
            if closer is not None and nxt is not None and nxt.start() < closer.start():
                closer = None
            body_end = closer.start() if closer else (nxt.start() if nxt else len(message))
            pos = closer.end() if closer else body_end
            if closer is None and nxt is None and cut:
                errors.append(TRUNCATED)
                return
            name, body = head.group("name"), message[head.end():body_end]
            raw = parse_parameters(body, _PARAMS)
            calls.append(ParsedCall(name=name, arguments=dumps_arguments(coerce_arguments(name, raw, tools))))
            if not raw and body.strip():
                errors.append(f"call {name!r}: a body without <rfl:parameter> elements: {body.strip()[:60]!r}")
        pieces.append(_CLOSERS.sub("", message[pos:]).replace(FINAL, ""))

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        messages = []
        if reasoning is not None:
            messages.append(f"{ANALYSIS}{reasoning}<|end|>")
        if content:
            messages.append(f"{FINAL}{content}<|end|>")
        for c in tool_calls:
            params = "".join(f'<rfl:parameter name="{k}">\n{format_value(v)}\n</rfl:parameter>'
                             for k, v in (arguments_object(c.arguments) or {}).items())
            messages.append(f" to={c.name}<|channel|>analysis <|constrain|>xml<|message|>{params}<|call|>")
        return START.join(messages)
