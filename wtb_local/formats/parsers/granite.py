"""IBM Granite tool calls.

- Granite 3.x: `<|tool_call|>` (3.0) or `<tool_call>` (3.1+) followed by a JSON list of
  `{"name", "arguments"}` objects, with no closing tag. Thinking mode (3.2/3.3) writes
  `<think>…</think><response>…</response>` or the plain headers "Here is my thought process:" /
  "Here is my response:".
- Granite 4: Hermes-style `<tool_call>\n{json}\n</tool_call>` blocks (read by the Hermes parser), with
  prose kept between calls and `arguments` sometimes a JSON-encoded string.
"""

from __future__ import annotations

import re

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.end_of_turn import strip_end_of_turn
from wtb_local.formats.parsers._common import join_content, split_reasoning
from wtb_local.formats.parsers._json_calls import parse_marked_calls
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import HermesParser
from wtb_local.formats.parsers.phi4_mini import call_list_text

MARKER = "<|tool_call|>"
_MARKER = re.compile(r"<\|tool_call\|>|<tool_call>(?=\s*[\[{])")
_RESPONSE_TAGS = re.compile(r"\s*</?response>\s*")
_HEADERS = re.compile(r"^\s*Here is my thought process:(.*?)Here is my response:(.*)$", re.DOTALL)


def _split_thoughts(text: str) -> tuple[str | None, str]:
    headers = _HEADERS.match(text)
    if headers:
        return headers.group(1).strip() or None, headers.group(2)
    reasoning, rest = split_reasoning(text, call_markers=(MARKER, "<tool_call>", "<response>"))
    return reasoning, _RESPONSE_TAGS.sub("\n", rest)


class GraniteParser(ToolParser):
    name = "granite"
    vllm_names = ("granite",)
    families = ("Granite 3.0", "Granite 3.1", "Granite 3.2", "Granite 3.3")
    model_patterns = (r"granite-3",)
    template_markers = ("<|tool_call|>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_of_turn(text)
        reasoning, rest = _split_thoughts(text)
        pieces, calls, errors = parse_marked_calls(rest, _MARKER, finish_reason, close_tag="</tool_call>")
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"<think>{reasoning}</think>" if reasoning else ""
        calls = MARKER + call_list_text(tool_calls) if tool_calls else ""
        return head + "\n".join(p for p in (content, calls) if p)


class Granite4Parser(HermesParser):
    name = "granite4"
    vllm_names = ("granite4",)
    families = ("Granite 4.0", "Granite 4.1")
    model_patterns = (r"granite-4",)
    # Its tool prompt also carries the Hermes marker; these names are specific to the Granite 4 templates
    # (4.0 and 4.1 both build a documents prompt; Granite 3.x templates do not).
    template_markers = ("g4_default_system_message", "documents_system_message_prefix")
    priority = 1
