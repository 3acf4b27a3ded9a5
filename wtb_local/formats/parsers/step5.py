"""StepFun Step-5 (vLLM `step5`): Qwen3-Coder XML calls (`<tool_call><function=NAME><parameter=KEY>…`) read
as `qwen3_coder` reads them, thinking off. vLLM keeps the whitespace of the content before a call; the
reply's content here is stripped as for every family (tests/parsers/conformance.py). The checkpoint id is
not public: `step-5` ids and the `Step5ForCausalLM` architecture select it.
"""

from __future__ import annotations

from typing import ClassVar

from wtb_local.formats.parsers.qwen3_coder import Qwen3CoderParser


class Step5Parser(Qwen3CoderParser):
    name = "step5"
    vllm_names: ClassVar[tuple[str, ...]] = ("step5",)
    families: ClassVar[tuple[str, ...]] = ("Step-5",)
    model_patterns: ClassVar[tuple[str, ...]] = (r"(^|/)step-?5\b",)
    template_markers: ClassVar[tuple[str, ...]] = ()
    priority = 2
