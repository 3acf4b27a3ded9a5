"""Hammer2.1 format: the xLAM JSON list of `{"name": …, "arguments": {…}}`, written in a ``` fence.

Hammer2.1's template asks for the list inside a ``` block and for `[]` when no call is needed
(docs/reference/paper-harness.md §2.3); parsing is the xLAM parser's (fence optional, prose kept).
"""

from __future__ import annotations

from wtb_local.formats.parsers.xlam import XlamParser


class HammerParser(XlamParser):
    name = "hammer"
    vllm_names = ()
    families = ("Hammer2.1 (MadeAgents, Qwen2.5-based)",)
    model_patterns = (r"hammer",)
    template_markers = ("[BEGIN OF AVAILABLE_TOOLS]",)
    priority = 10
    fence = "```"
