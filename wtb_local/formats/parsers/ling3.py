"""inclusionAI Ling 3 (Ling-3.0-flash; vLLM and SGLang `ling3`): GLM-4.7's call format,

    <tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value></tool_call>

with or without a newline after the name, `<tool_call>NAME</tool_call>` without arguments, values typed by
the tool schema (formats/parsers/glm47.py). Reasoning: `<think>…</think>`, on unless `enable_thinking` /
`thinking` is false; a prompt that opened the block leaves a reply cut mid-thought as reasoning
(`thinking=True`, as for every family).
"""

from __future__ import annotations

from typing import ClassVar

from wtb_local.formats.parsers.glm47 import Glm47Parser


class Ling3Parser(Glm47Parser):
    name = "ling3"
    vllm_names: ClassVar[tuple[str, ...]] = ("ling3",)
    families: ClassVar[tuple[str, ...]] = ("Ling 3 (Ling-3.0-flash)",)
    model_patterns: ClassVar[tuple[str, ...]] = (r"inclusionai/ling-3", r"(^|/)ling-?3(\.\d+)?-", r"(^|/)ring-?3(\.\d+)?-")
    template_markers: ClassVar[tuple[str, ...]] = ()  # no template of its own is public; the GLM-4.7 markers select glm47, which reads the same
    priority = 1
