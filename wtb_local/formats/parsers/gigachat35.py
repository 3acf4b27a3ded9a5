"""GigaChat 3.5 (GigaChat3.5-432B-A28B; SGLang `gigachat35`, a vLLM test names it too): GCML, DeepSeek-V4's
DSML call markup under another marker,

    <｜GCML｜tool_calls>
    <｜GCML｜invoke name="NAME">
    <｜GCML｜parameter name="KEY" string="true">raw text</｜GCML｜parameter>
    <｜GCML｜parameter name="KEY" string="false">JSON</｜GCML｜parameter>
    </｜GCML｜invoke>
    </｜GCML｜tool_calls>

read by the DSML reader (formats/parsers/_dsml.py: `string="true"` values as written, `string="false"` ones
as JSON, never retyped by the schema), with every message and error in GCML's own spelling. Reasoning:
`<think>…</think>`. Roles are separated by `<|role_sep|>` and messages by `<|message_sep|>` (its template,
tests/fixtures/rendering/2026h2/).
"""

from __future__ import annotations

import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._dsml import DSML, V4, format_dsml, parse_dsml
from wtb_local.formats.parsers.base import ToolParser

GCML = "｜GCML｜"
_TO_DSML = re.compile(r"<(/?)\s*[｜|]\s*GCML\s*[｜|]")


def _to_gcml(text: str | None) -> str | None:
    return text.replace(DSML, GCML).replace("DeepSeek-V4's", "GigaChat 3.5's") if text is not None else None


class GigaChat35Parser(ToolParser):
    name = "gigachat35"
    vllm_names: ClassVar[tuple[str, ...]] = ("gigachat35",)
    families = ("GigaChat3.5",)
    model_patterns = (r"gigachat-?3\.5",)
    template_markers = ("<｜GCML｜",)
    priority = 3  # its template also carries GigaChat3's <|role_sep|>

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = _TO_DSML.sub(lambda m: f"<{m.group(1)}{DSML}", text or "")
        result = parse_dsml(text, V4, thinking=self.options.get("thinking"), tools=tools,
                            finish_reason=finish_reason)
        return result.model_copy(update={"content": _to_gcml(result.content),
                                         "errors": [_to_gcml(e) or "" for e in result.errors]})

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        return format_dsml(V4, content, tool_calls, reasoning).replace(DSML, GCML)
