"""IBM granite-20b-functioncalling (vLLM `granite-20b-fc`): each call is `<function_call>` followed by one
JSON object `{"name", "arguments"}`, with no closing tag; several calls follow one another, the text before
the first is content. Arguments text is kept as written.
"""

from __future__ import annotations

import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import join_content
from wtb_local.formats.parsers._json_calls import scan_object
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
        pieces: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        found = list(_MARKER.finditer(text))
        pos = 0
        for n, marker in enumerate(found):
            if marker.start() < pos:
                continue
            pieces.append(text[pos:marker.start()])
            if marker.end() >= len(text) or text[marker.end()] != "{":
                errors.append(f"no JSON call object after {MARKER}")
                pieces.append(marker.group(0))
                pos = marker.end()
                continue
            scan = scan_object(text, marker.end())
            got, errs = scan.finish(finish_reason == "length" and n == len(found) - 1)
            calls += got
            errors += errs
            if not got and not scan.calls and scan.partial is None and errs[-1:] != ["truncated tool call"]:
                pieces.append(text[marker.start():scan.end])
            pos = scan.end
        pieces.append(text[pos:])
        return ParseResult(content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        calls = " ".join(f"{MARKER} {HermesParser.call_json(c)}" for c in tool_calls)
        return " ".join(p for p in (content, calls) if p)
