"""DeepSeek-V3.1 tool calls: `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>` entries in the
V3 section markers, with no `function` prefix and no code fence (the V3 reader accepts both layouts).

Thinking is a template switch: the generation prompt ends with `<think>` (thinking) or `</think>` (not),
so a thinking completion is `reasoning</think>answer`; without `</think>` the reply is an answer unless
the parser is built with `thinking=True`.
"""

from __future__ import annotations

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import split_reasoning
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.deepseek_v3 import (
    CALL_BEGIN,
    CALL_END,
    CALLS_BEGIN,
    CALLS_END,
    SEP,
    parse_deepseek,
)


class DeepSeekV31Parser(ToolParser):
    name = "deepseek_v31"
    vllm_names = ("deepseek_v31",)
    families = ("DeepSeek-V3.1",)
    model_patterns = (r"deepseek-v3\.1",)
    template_markers = ("tool['function']['name'] + '<｜tool▁sep｜>'",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        thinking = self.options.get("thinking")
        reasoning, rest = split_reasoning(text, thinking=True if thinking else None,
                                          call_markers=(CALLS_BEGIN, CALL_BEGIN))
        return parse_deepseek(rest, reasoning, finish_reason)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        # Thinking mode pre-fills `<think>` (the parser reads completions without it); written in full here.
        head = f"<think>{reasoning}</think>" if reasoning else ""
        calls = "".join(f"{CALL_BEGIN}{c.name}{SEP}{c.arguments}{CALL_END}" for c in tool_calls)
        return head + (content or "") + (CALLS_BEGIN + calls + CALLS_END if tool_calls else "")
