"""IBM granite-20b-functioncalling (vLLM `granite-20b-fc`): each call is `<function_call>` followed by one
JSON object `{"name", "arguments"}`, with no closing tag; several calls follow one another, the text before
the first is content. Arguments text is kept as written.
"""

from __future__ import annotations

import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import is_truncated, join_content
from wtb_local.formats.parsers._json_calls import parse_marked_objects
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import HermesParser, strip_end_tokens

MARKER = "<function_call>"
_MARKER = re.compile(re.escape(MARKER) + r"\s*")


class Granite20bFcParser(ToolParser):
    name = "granite_20b_fc"
    vllm_names: ClassVar[tuple[str, ...]] = ("granite-20b-fc",)
    families = ("granite-20b-functioncalling",)
    model_patterns = (r"granite-20b-functioncalling", r"granite-20b-fc")
    template_markers = ()
    priority = 2  # the ids also match granite's generic patterns

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "")
        pieces, calls, errors = parse_marked_objects(text, _MARKER, is_truncated(finish_reason),
                                                     lambda _: f"no JSON call object after {MARKER}")
        return ParseResult(content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        calls = " ".join(f"{MARKER} {HermesParser.call_json(c)}" for c in tool_calls)
        return " ".join(p for p in (content, calls) if p)
