"""IBM Granite 4.2 (vLLM 0.34 `granite_toolcall_parser`): Granite moved to the Qwen3-Coder / Nemotron 3 XML
grammar,

    <tool_call>
    <function=NAME>
    <parameter=KEY>
    value
    </parameter>
    </function>
    </tool_call>

read as `qwen3_coder` reads it (values typed by the tool schema), with `<think>…</think>` reasoning; the
newline the template writes after `</think>` is layout. Granite 4.0 / 4.1 keep `granite4` (Hermes JSON).
"""

from __future__ import annotations

from typing import ClassVar

from wtb_local.formats.parsers.qwen3_coder import Qwen3CoderParser


class Granite42Parser(Qwen3CoderParser):
    name = "granite42"
    vllm_names: ClassVar[tuple[str, ...]] = ("granite_toolcall_parser",)
    families: ClassVar[tuple[str, ...]] = ("Granite 4.2 (3b, 8b, 30b)",)
    model_patterns: ClassVar[tuple[str, ...]] = (r"granite-4\.[2-9]",)
    template_markers: ClassVar[tuple[str, ...]] = ()
    priority = 3  # granite4's pattern (granite-4) matches these ids too
