"""Ricursive Ripple (vLLM `ripple`): Hermes-style plain-text tags around one JSON call object,

    <tool_call>
    {"name": "NAME", "arguments": {…}}
    </tool_call>

read as `hermes` reads them (the newlines framing the tags are markup). The model decides each turn whether
to think: the generation prompt does not open `<think>`, so a block is reasoning only when written. The
checkpoint id is not public: `ripple` ids and the `RicursiveForCausalLM` architecture select it.
"""

from __future__ import annotations

from typing import ClassVar

from wtb_local.formats.parsers.hermes import HermesParser


class RippleParser(HermesParser):
    name = "ripple"
    vllm_names: ClassVar[tuple[str, ...]] = ("ripple",)
    families: ClassVar[tuple[str, ...]] = ("Ricursive Ripple",)
    model_patterns: ClassVar[tuple[str, ...]] = (r"ricursive", r"(^|/)ripple-")
    template_markers: ClassVar[tuple[str, ...]] = ()
    priority = 1
