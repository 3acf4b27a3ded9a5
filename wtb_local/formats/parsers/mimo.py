"""Xiaomi MiMo-V2-Flash, MiMo-V2.5 and V2.5-Pro (vLLM and SGLang `mimo`): Qwen3-Coder XML calls in
`<tool_call>…</tool_call>`, newlines around values optional, with a `<think>` block (on by default).

Values are typed by the tool schema as `qwen3_coder` types them (SGLang's `mimo` does the same; vLLM 0.34's
keeps every value a string, which the evaluator would score as a wrong argument type). A call to a tool
the request did not offer is kept (docs/parser-policies.md: unknown tools kept; SGLang drops it).
"""

from __future__ import annotations

from typing import ClassVar

from wtb_local.formats.parsers.qwen3_coder import Qwen3CoderParser


class MimoParser(Qwen3CoderParser):
    name = "mimo"
    vllm_names: ClassVar[tuple[str, ...]] = ("mimo",)
    families: ClassVar[tuple[str, ...]] = ("MiMo-V2-Flash", "MiMo-V2.5", "MiMo-V2.5-Pro")
    model_patterns: ClassVar[tuple[str, ...]] = (r"xiaomimimo/", r"(^|/)mimo-v2")
    template_markers: ClassVar[tuple[str, ...]] = ()  # a template of this format selects qwen3_coder, which reads it the same way
    priority = 2
