"""MiniMax-M2 tool calls: one `<minimax:tool_call>` block holding one `<invoke>` per call,

    <minimax:tool_call>
    <invoke name="NAME">
    <parameter name="KEY">value</parameter>
    </invoke>
    </minimax:tool_call>

Values are raw text (kept exactly, markup inside included) typed by the tools' schema; an `<invoke>`
written without its wrapper still counts. The generation
prompt pre-fills `<think>\\n`, so a completion starts inside the reasoning; MiniMax closes the block
before acting, so a call with no `</think>` anywhere means the model skipped thinking and the text
before it is visible content.
"""

from __future__ import annotations

import re

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import arguments_object, join_content, split_reasoning
from wtb_local.formats.parsers._xml_calls import XmlSyntax, format_value, parse_wrapped_calls
from wtb_local.formats.parsers.base import ToolParser

OPEN, CLOSE = "<minimax:tool_call>", "</minimax:tool_call>"
SYNTAX = XmlSyntax(function_open=re.compile(r"""<invoke\s+name\s*=\s*["']?([^"'>]*)["']?\s*>"""),
                   function_close="</invoke>",
                   param_open=re.compile(r"""<parameter\s+name\s*=\s*["']?([^"'>]*)["']?\s*>"""),
                   strip_one_newline=False)


class MiniMaxM2Parser(ToolParser):
    name = "minimax_m2"
    vllm_names = ("minimax_m2",)
    families = ("MiniMax-M2",)
    model_patterns = (r"minimax-m2",)
    template_markers = ("<minimax:tool_call>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        thinking = self.options.get("thinking", True)
        if thinking and "</think>" not in text and OPEN in text and not text.lstrip().startswith("<think>"):
            thinking = None
        reasoning, rest = split_reasoning(text, thinking=thinking, call_markers=(OPEN,))
        pieces, calls, errors = parse_wrapped_calls(rest, tools, finish_reason, open_tag=OPEN, close_tag=CLOSE,
                                                    syntax=SYNTAX, bare_open="<invoke", bare_close="</invoke>")
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"<think>\n{reasoning}\n</think>\n\n" if reasoning else "</think>\n\n"
        invokes = "".join(
            f'<invoke name="{c.name}">\n'
            + "".join(f'<parameter name="{k}">{format_value(v)}</parameter>\n'
                      for k, v in (arguments_object(c.arguments) or {}).items())
            + "</invoke>\n" for c in tool_calls)
        block = f"\n{OPEN}\n{invokes}{CLOSE}" if tool_calls else ""
        return head + (content or "") + block
