"""GigaChat3 / GigaChat3.1 tool calls: one JSON call object after the function-call marker,

    content<|function_call|>{"name": "NAME", "arguments": {…}}                               (GigaChat3.1)
    content<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "NAME", "arguments": {…}}   (GigaChat3)

GigaChat3 writes the call as a turn of its own (`function call` role) after the assistant's message;
GigaChat3.1 marks it with `<|function_call|>`. Their templates show one call per assistant message, so the
probe splits parallel calls into one message each. The arguments text is kept as written.
"""

from __future__ import annotations

import json
import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import arguments_object, is_truncated, join_content
from wtb_local.formats.parsers._json_calls import parse_marked_objects
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens

FUNCTION_CALL = "<|function_call|>"
ROLE_SEP, MESSAGE_SEP = "<|role_sep|>", "<|message_sep|>"
_MARKER = re.compile(r"<\|function_call\|>|(?:<\|message_sep\|>\s*)?function call<\|role_sep\|>")


class GigaChat3Parser(ToolParser):
    name = "gigachat3"
    vllm_names: ClassVar[tuple[str, ...]] = ("gigachat3",)
    families = ("GigaChat3", "GigaChat3.1")
    model_patterns = (r"gigachat-?3",)
    template_markers = ("<|role_sep|>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "")
        pieces, calls, errors = parse_marked_objects(
            text, _MARKER, is_truncated(finish_reason),
            lambda marker: f"no JSON call object after {marker.group(0).strip()!r}")
        return ParseResult(content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        calls = "".join(
            f'{FUNCTION_CALL}{{"name": {json.dumps(c.name, ensure_ascii=False)}, "arguments": '
            f'{c.arguments if arguments_object(c.arguments) is not None else json.dumps(c.arguments)}}}'
            for c in tool_calls)
        return (content or "") + calls
