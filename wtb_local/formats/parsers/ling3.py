"""inclusionAI Ling 3 (Ling-3.0-flash; vLLM and SGLang `ling3`): GLM-4.7's call format,

    <tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value></tool_call>

with or without a newline after the name, `<tool_call>NAME</tool_call>` without arguments, values typed by
the tool schema (formats/parsers/glm47.py). Reasoning: `<think>…</think>`, on unless `enable_thinking` /
`thinking` is false, and then the prompt opens the block: a reply is read as starting inside it by default
(as vLLM's `ling3` reasoning parser reads it), so one cut mid-thought is reasoning; `thinking=False` reads
it as an answer.
"""

from __future__ import annotations

from typing import ClassVar

from wtb_local.contract.schema import ParsedCall
from wtb_local.formats.parsers.glm47 import Glm47Parser


class Ling3Parser(Glm47Parser):
    name = "ling3"
    vllm_names: ClassVar[tuple[str, ...]] = ("ling3",)
    families: ClassVar[tuple[str, ...]] = ("Ling 3 (Ling-3.0-flash)",)
    model_patterns: ClassVar[tuple[str, ...]] = (r"inclusionai/ling-3", r"(^|/)ling-?3(\.\d+)?-", r"(^|/)ring-?3(\.\d+)?-")
    template_markers: ClassVar[tuple[str, ...]] = ()  # no template of its own is public; the GLM-4.7 markers select glm47, which reads the same
    priority = 1
    thinking: ClassVar[bool] = True  # thinking is on by default and the prompt opens the block

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        # the block is always there: closed empty when there is no reasoning, as after an opened prompt
        return super().format(content, tool_calls, reasoning if reasoning is not None else "")
