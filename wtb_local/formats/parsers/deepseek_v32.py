"""DeepSeek-V3.2 (and V3.2-Exp, V3.2-Speciale) tool calls: DSML `<｜DSML｜function_calls>` blocks
(formats/parsers/_dsml.py).

The model ships no Jinja template, only a Python encoder; wtb_local renders its prompts with the
`deepseek_v32` renderer in chat_templates/ (docs/parsers-and-templates.md, "Renderers"). Thinking is a
switch (`thinking`, default off): the prompt ends with `<think>` (on) or `</think>` (off), so a thinking
completion is `reasoning</think>answer`; without `</think>` the reply is an answer unless the parser is
built with `thinking=True`.
"""

from __future__ import annotations

from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._dsml import V32, format_dsml, parse_dsml
from wtb_local.formats.parsers.base import ToolParser


class DeepSeekV32Parser(ToolParser):
    name = "deepseek_v32"
    vllm_names: ClassVar[tuple[str, ...]] = ("deepseek_v32",)
    families = ("DeepSeek-V3.2", "DeepSeek-V3.2-Exp", "DeepSeek-V3.2-Speciale")
    model_patterns = (r"deepseek-v3\.2", r"deepseek-v32")
    template_markers = ("<｜DSML｜function_calls>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        return parse_dsml(text, V32, thinking=self.options.get("thinking"), tools=tools,
                          finish_reason=finish_reason)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        return format_dsml(V32, content, tool_calls, reasoning)
