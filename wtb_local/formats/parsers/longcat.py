"""LongCat-Flash (Chat, Thinking) tool calls: one JSON call object per `<longcat_tool_call>` block,

    <longcat_tool_call>{"name": "NAME", "arguments": {…}}</longcat_tool_call>

newline-separated when parallel (the Hermes layout with LongCat's own tags, formats/parsers/hermes.py). Reasoning:
`<longcat_think>…</longcat_think>` (vLLM's longcat reasoning parser). A call whose arguments are not a JSON
object is kept with its raw text and an error.
"""

from __future__ import annotations

import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParseResult
from wtb_local.formats.parsers._common import decode_json_at
from wtb_local.formats.parsers.hermes import HermesParser

_BLOCK = re.compile(r"<longcat_tool_call>(.*?)</longcat_tool_call>", re.DOTALL)


class LongcatParser(HermesParser):
    name = "longcat"
    vllm_names: ClassVar[tuple[str, ...]] = ("longcat",)
    families = ("LongCat-Flash-Chat", "LongCat-Flash-Thinking")
    model_patterns = (r"longcat",)
    template_markers = ("<longcat_tool_call>",)
    priority = 1  # its template may also show the generic {"name": <function-name>} example

    open_tag: ClassVar[str] = "<longcat_tool_call>"
    close_tag: ClassVar[str] = "</longcat_tool_call>"
    think_open: ClassVar[str] = "<longcat_think>"
    think_close: ClassVar[str] = "</longcat_think>"

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        result = super().parse(text, tools=tools, finish_reason=finish_reason)
        # a well-formed call object whose arguments are not an object (a string, a list): kept, named
        for body in _BLOCK.findall(text or ""):
            decoded = decode_json_at(body, 0)
            value = decoded[0] if decoded else None
            if (isinstance(value, dict) and "arguments" in value and not isinstance(value["arguments"], dict)
                    and any(c.name == value.get("name") for c in result.tool_calls)):
                result.errors.append(f"arguments of {value.get('name')} are not a JSON object; kept as raw text")
        return result
