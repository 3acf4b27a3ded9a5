"""DeepSeek-V4 (V4-Flash, V4-Pro, V4-Flash-0731) tool calls: DSML `<｜DSML｜tool_calls>` blocks
(formats/parsers/_dsml.py). A V3.2 `<｜DSML｜function_calls>` block is not read as calls (as vLLM's deepseek_v4
parser does not), but named in an error.

Rendered with the `deepseek_v4` renderer (chat_templates/): thinking is on unless switched off
(`thinking=false`), and tool results are `<tool_result>` blocks inside the next user turn.
"""

from __future__ import annotations

from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._dsml import V4, format_dsml, parse_dsml
from wtb_local.formats.parsers.base import ToolParser


class DeepSeekV4Parser(ToolParser):
    name = "deepseek_v4"
    vllm_names: ClassVar[tuple[str, ...]] = ("deepseek_v4",)
    families = ("DeepSeek-V4-Flash", "DeepSeek-V4-Pro", "DeepSeek-V4-Flash-0731")
    model_patterns = (r"deepseek-v4(?!\.[1-9])",)
    template_markers = ("<｜DSML｜tool_calls>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        return parse_dsml(text, V4, thinking=self.options.get("thinking"), tools=tools,
                          finish_reason=finish_reason)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        return format_dsml(V4, content, tool_calls, reasoning)
