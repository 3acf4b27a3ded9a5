"""AI21 Jamba (vLLM `jamba`): one JSON list of `{"name", "arguments"}` objects inside `<tool_calls>…</tool_calls>`,
the text before it content. Each call's arguments text is kept as written; a broken item keeps its name
and raw arguments with an error (formats/parsers/_json_calls.py).
"""

from __future__ import annotations

import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import join_content
from wtb_local.formats.parsers._json_calls import parse_marked_calls
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens
from wtb_local.formats.parsers.phi4_mini import call_list_text

OPEN, CLOSE = "<tool_calls>", "</tool_calls>"
_MARKER = re.compile(re.escape(OPEN))


class JambaParser(ToolParser):
    name = "jamba"
    vllm_names: ClassVar[tuple[str, ...]] = ("jamba",)
    families = ("Jamba 1.5", "Jamba 1.6", "Jamba 1.7")
    model_patterns = (r"ai21labs/", r"(^|/)(ai21-)?jamba")
    template_markers = ()  # Hunyuan-A13B's template shows the same wrapper; a Jamba template is not told apart
    priority = 1

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "")
        pieces, calls, errors = parse_marked_calls(text, _MARKER, finish_reason, close_tag=CLOSE,
                                                   close_required=True)
        return ParseResult(content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        calls = f"{OPEN}{call_list_text(tool_calls)}{CLOSE}" if tool_calls else ""
        return "\n".join(p for p in (content, calls) if p)
