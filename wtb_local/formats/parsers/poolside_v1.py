"""Poolside Laguna (XS.2, XS-2.1, S-2.1, M.1) tool calls, GLM-style:

    <tool_call>NAME
    <arg_key>KEY</arg_key>
    <arg_value>VALUE</arg_value>
    </tool_call>

with or without the newlines. String values are kept verbatim (indentation and trailing newlines are part of
the value); other values are typed by the tool schema after stripping. A name may hold inner spaces (it is
stripped at both ends), as vLLM's poolside_v1 reads it. The assistant turn ends with `</assistant>`; the
generation prompt pre-fills `</think>` (thinking off, the default) or `<think>` (`enable_thinking=true`).
"""

from __future__ import annotations

import re
from typing import ClassVar

from wtb_local.contract.schema import ParsedCall
from wtb_local.formats.parsers.glm45 import CLOSE, OPEN
from wtb_local.formats.parsers.glm47 import Glm47Parser, arg_pairs


class PoolsideV1Parser(Glm47Parser):
    name = "poolside_v1"
    vllm_names: ClassVar[tuple[str, ...]] = ("poolside_v1",)
    families = ("Laguna-XS.2", "Laguna-XS-2.1", "Laguna-S-2.1", "Laguna-M.1")
    model_patterns = (r"poolside/", r"laguna")
    template_markers = ("〈|EOS|〉", "<available_tools>")
    priority = 6  # its template also shows the GLM call layout (<arg_key>)
    name_pattern: ClassVar[re.Pattern[str]] = re.compile(r"[^\s<>](?:[^<>\n]*[^\s<>])?")

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        head = f"<think>\n{reasoning}\n</think>\n" if reasoning is not None else ""
        body = f"{content.strip()}\n" if content and content.strip() else ""
        calls = "".join(f"{OPEN}{c.name}\n{arg_pairs(c.arguments, separator=chr(10))}{CLOSE}\n" for c in tool_calls)
        return head + body + calls
