"""Tencent Hy3 (Hy3-preview) tool calls: GLM-style argument pairs after a `<tool_sep>`, in one wrapper,

    <tool_calls>
    <tool_call>NAME<tool_sep>
    <arg_key>KEY</arg_key>
    <arg_value>VALUE</arg_value>
    </tool_call>
    </tool_calls>

and `<tool_call>NAME<tool_sep></tool_call>` without arguments. Values are raw text typed by the tool schema
(formats/parsers/glm45.py). Hy3's chat template spells every special token with a `:opensource` suffix
(`<tool_calls:opensource>`, `<think:opensource>`, ...) while vLLM's parser reads the plain spelling; both are
read. Reasoning: `<think>…</think>`; the prompt pre-fills `<think>` for `reasoning_effort` low/high and an
empty block for `no_think` (the default).
"""

from __future__ import annotations

import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.end_of_turn import END_OF_TURN
from wtb_local.formats.parsers.glm45 import CLOSE, OPEN, Glm45Parser
from wtb_local.formats.parsers.glm47 import arg_pairs
from wtb_local.formats.parsers.hermes import strip_end_tokens

WRAP_OPEN, WRAP_CLOSE, SEP = "<tool_calls>", "</tool_calls>", "<tool_sep>"
_SUFFIXED = re.compile(r"<(/?)(tool_calls|tool_call|tool_sep|arg_key|arg_value|think|tool_responses|tool_response)"
                       r":opensource>")
_WRAPPER = re.compile(r"\s*</?tool_calls>\s*")


class HyV3Parser(Glm45Parser):
    name = "hy_v3"
    vllm_names: ClassVar[tuple[str, ...]] = ("hy_v3",)
    families = ("Hy3", "Hy3-preview")
    model_patterns = (r"tencent/hy3", r"(^|/)hy3", r"hy-3")
    template_markers = ("<tool_sep",)
    priority = 6  # the template also carries GLM-style <arg_key> markup

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = _SUFFIXED.sub(r"<\1\2>", strip_end_tokens(text or "", END_OF_TURN))
        unterminated = text.count(WRAP_OPEN) > text.count(WRAP_CLOSE)
        # the wrapper and the separator are layout: what is left is the GLM-4.5 call format
        text = _WRAPPER.sub("\n", text).replace(SEP, "\n")
        result = super().parse(text, tools=tools, finish_reason=finish_reason)
        if unterminated and result.tool_calls and not any("truncated" in e for e in result.errors):
            result.errors.append(f"no {WRAP_CLOSE} (an unterminated block); calls kept")
        return result

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        head = f"<think>{reasoning}</think>" if reasoning is not None else ""
        if not tool_calls:
            return head + (content or "")
        calls = "".join(f"{OPEN}{c.name}{SEP}\n{arg_pairs(c.arguments, separator=chr(10))}{CLOSE}\n"
                        for c in tool_calls)
        return head + (content or "") + f"{WRAP_OPEN}\n{calls}{WRAP_CLOSE}"
