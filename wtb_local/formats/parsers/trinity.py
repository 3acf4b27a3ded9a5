"""Arcee Trinity (Trinity-Large-Thinking; SGLang-only `trinity`): Qwen2.5 / Hermes JSON calls,

    <tool_call>
    {"name": "NAME", "arguments": {…}}
    </tool_call>

read as `hermes` reads them, with a `<think>…</think>` block. SGLang's detector drops the think tags and keeps
their text as content (it has no reasoning parser); here the block is reasoning and a call written inside
it is counted, not executed (docs/parser-policies.md §1), as for every family.
"""

from __future__ import annotations

from typing import ClassVar

from wtb_local.formats.parsers.hermes import HermesParser


class TrinityParser(HermesParser):
    name = "trinity"
    vllm_names: ClassVar[tuple[str, ...]] = ()
    families: ClassVar[tuple[str, ...]] = ("Trinity-Large-Thinking", "Trinity (Arcee)")
    model_patterns: ClassVar[tuple[str, ...]] = (r"arcee-ai/trinity", r"(^|/)trinity-(large|mini|nano)")
    template_markers: ClassVar[tuple[str, ...]] = ()
    priority = 1
