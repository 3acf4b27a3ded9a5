"""ERNIE 4.5 (`ernie45`): one JSON call object per `<tool_call>…</tool_call>` block, as Hermes writes
them; the Thinking models close their reasoning with `</think>` (the opening tag is in the prompt) before
the calls. Read by the Hermes parser: the reasoning is split off first, as vLLM's reasoning parser does
before its tool parser runs.
"""

from __future__ import annotations

from wtb_local.formats.parsers.hermes import HermesParser


class Ernie45Parser(HermesParser):
    name = "ernie45"
    vllm_names = ("ernie45",)
    families = ("ERNIE-4.5 (21B-A3B, 300B-A47B, -Thinking)",)
    model_patterns = (r"ernie-?4\.5",)
    template_markers = ()
    priority = 1
