"""Zyphra ZAYA1 (ZAYA1-8B, ZAYA1-74B-Preview; vLLM `zaya` and its alias `zaya_xml`): the Qwen3 grammar with
its own call wrapper,

    <zyphra_tool_call>
    <function=NAME>
    <parameter=KEY>
    value
    </parameter>
    </function>
    </zyphra_tool_call>

values typed by the tool schema (one newline on each side of a value is layout), `<think>` reasoning.
"""

from __future__ import annotations

from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import join_content, split_reasoning
from wtb_local.formats.parsers._xml_calls import parse_wrapped_calls
from wtb_local.formats.parsers.hermes import json_block_calls, strip_end_tokens
from wtb_local.formats.parsers.qwen3_coder import SYNTAX, Qwen3CoderParser, function_text

OPEN, CLOSE = "<zyphra_tool_call>", "</zyphra_tool_call>"


class ZayaParser(Qwen3CoderParser):
    name = "zaya"
    vllm_names: ClassVar[tuple[str, ...]] = ("zaya", "zaya_xml")
    families: ClassVar[tuple[str, ...]] = ("ZAYA1-8B", "ZAYA1-74B-Preview")
    model_patterns: ClassVar[tuple[str, ...]] = (r"zyphra/zaya", r"(^|/)zaya-?1")
    template_markers: ClassVar[tuple[str, ...]] = (OPEN,)
    priority = 2

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "")
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"),
                                          call_markers=(OPEN, "<function="))
        pieces, calls, errors = parse_wrapped_calls(rest, tools, finish_reason, open_tag=OPEN, close_tag=CLOSE,
                                                    syntax=SYNTAX, bare_open="<function=",
                                                    bare_close="</function>", json_fallback=json_block_calls)
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        head = f"<think>\n{reasoning}\n</think>\n\n" if reasoning else ""
        blocks = [f"{OPEN}\n{function_text(c, value_newlines=True)}\n{CLOSE}" for c in tool_calls]
        return head + "\n".join(([content] if content else []) + blocks)
