"""Phi-4-mini tool calls: `functools[{"name": …, "arguments": {…}}, …]`, no closing marker.

Arguments keep the model's JSON text; prose around the list is content (vLLM drops it); an empty
`functools[]` list calls nothing and stays text.
"""

from __future__ import annotations

import json
import re

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import join_content
from wtb_local.formats.parsers._json_calls import parse_marked_calls
from wtb_local.formats.parsers.base import ToolParser

MARKER = "functools"
_MARKER = re.compile(r"functools(?=\s*[\[{])")


def call_list_text(tool_calls: list[ParsedCall]) -> str:
    """`[{"name": …, "arguments": …}, …]` with each argument text inserted as written."""
    return "[" + ", ".join(f'{{"name": {json.dumps(c.name, ensure_ascii=False)}, "arguments": {c.arguments}}}'
                           for c in tool_calls) + "]"


class Phi4MiniParser(ToolParser):
    name = "phi4_mini"
    vllm_names = ("phi4_mini_json",)
    families = ("Phi-4-mini",)
    model_patterns = (r"phi-4-mini",)
    template_markers = ("functools[",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        pieces, calls, errors = parse_marked_calls(text, _MARKER, finish_reason)
        return ParseResult(content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        calls = MARKER + call_list_text(tool_calls) if tool_calls else ""
        return "\n".join(p for p in (content, calls) if p)
