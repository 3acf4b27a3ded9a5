"""Hunyuan-A13B replies: `<think>\n…\n</think>\n<answer>\n…\n</answer>`, with calls written as
`<tool_calls>[{"name": …, "arguments": {…}}]</tool_calls>` inside the answer.

The `<answer>` wrapper is layout, not content, and so is the "助手：" ("Assistant:") prefix the tool
prompt tells the model to start a text reply with; arguments keep the model's JSON text; fast-thinking
mode writes an empty think block (no reasoning).
"""

from __future__ import annotations

import re

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import join_content, split_reasoning
from wtb_local.formats.parsers._json_calls import parse_marked_calls
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.phi4_mini import call_list_text

OPEN, CLOSE = "<tool_calls>", "</tool_calls>"
_MARKER = re.compile(re.escape(OPEN))
_ANSWER_TAGS = re.compile(r"\s*</?answer>\s*")
_REPLY_PREFIX = re.compile(r"^\s*助手[：:]")


class HunyuanParser(ToolParser):
    name = "hunyuan"
    vllm_names = ("hunyuan_a13b",)
    families = ("Hunyuan-A13B",)
    model_patterns = (r"hunyuan",)
    template_markers = ("<tool_calls>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"),
                                          call_markers=(OPEN, "<answer>"))
        rest = _REPLY_PREFIX.sub("", _ANSWER_TAGS.sub("\n", rest))
        pieces, calls, errors = parse_marked_calls(rest, _MARKER, finish_reason, close_tag=CLOSE,
                                                   close_required=True)
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"<think>\n{reasoning}\n</think>\n" if reasoning else ""
        calls = f"{OPEN}{call_list_text(tool_calls)}{CLOSE}" if tool_calls else ""
        answer = " ".join(p for p in (content, calls) if p)
        return f"{head}<answer>\n{answer}\n</answer>" if answer or head else ""
