"""DeepSeek-V4.1 tool calls: DSML blocks whose tag names follow the marker after a space,
`<｜DSML｜ calls>` / `<｜DSML｜ invoke name="…">` / `<｜DSML｜ parameter …>` (formats/parsers/_dsml.py). V3.2 and V4
blocks are not read as calls, but named in an error.

Rendered with the `deepseek_v41` renderer (chat_templates/): `<｜System｜>` opens the system prompt, thinking
is on unless switched off, and a thinking prompt starts with the numeric reasoning-effort line.
"""

from __future__ import annotations

from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._dsml import V41, format_dsml, parse_dsml
from wtb_local.formats.parsers.base import ToolParser


class DeepSeekV41Parser(ToolParser):
    name = "deepseek_v41"
    vllm_names: ClassVar[tuple[str, ...]] = ("deepseek_v41",)
    families = ("DeepSeek-V4.1",)
    model_patterns = (r"deepseek-v4\.[1-9]",)
    template_markers = ("<｜DSML｜ calls>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        return parse_dsml(text, V41, thinking=self.options.get("thinking"), tools=tools,
                          finish_reason=finish_reason)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        return format_dsml(V41, content, tool_calls, reasoning)
