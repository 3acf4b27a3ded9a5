"""Seed-OSS tool calls: the Qwen3-Coder XML with Seed prefixes,

    <seed:tool_call>
    <function=NAME>
    <parameter=KEY>value</parameter>
    </function>
    </seed:tool_call>

after a `<seed:think>…</seed:think>` block (with `<seed:cot_budget_reflect>` budget notes inside).
The thinking text may quote call syntax, so calls are read only after the block. The template does not
pre-fill the opening tag (except with a zero thinking budget, where it writes the whole block itself),
so a completion with no thinking tags at all is an answer.
"""

from __future__ import annotations

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import join_content, split_reasoning
from wtb_local.formats.parsers._xml_calls import parse_wrapped_calls
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.qwen3_coder import SYNTAX, function_text

OPEN, CLOSE = "<seed:tool_call>", "</seed:tool_call>"


class SeedOssParser(ToolParser):
    name = "seed_oss"
    vllm_names = ("seed_oss",)
    families = ("Seed-OSS",)
    model_patterns = (r"seed-oss",)
    template_markers = ("<seed:tool_call>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"), open_tag="<seed:think>",
                                          close_tag="</seed:think>", call_markers=(OPEN,))
        pieces, calls, errors = parse_wrapped_calls(rest, tools, finish_reason, open_tag=OPEN, close_tag=CLOSE,
                                                    syntax=SYNTAX, bare_open="<function=",
                                                    bare_close="</function>")
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"<seed:think>{reasoning}</seed:think>\n" if reasoning else ""
        blocks = [f"{OPEN}\n{function_text(c, value_newlines=False)}\n{CLOSE}" for c in tool_calls]
        return head + "\n".join(([content] if content else []) + blocks)
