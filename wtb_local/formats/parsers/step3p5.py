"""Step-3.5-Flash / Step-3.7-Flash (`step3p5`): Qwen3-Coder XML calls after the reasoning block,

    reasoning</think>
    <tool_call>
    <function=NAME>
    <parameter=KEY>
    value
    </parameter>
    </function>
    </tool_call>

read as `qwen3_coder` reads them (values typed by the tool schema: a string parameter stays "5123123",
an integer one becomes 5123123). The template pre-fills `<think>\\n` and feeds results back as a
`tool_response` turn, which is how its template is told apart from Qwen's.
"""

from __future__ import annotations

from wtb_local.formats.parsers.qwen3_coder import Qwen3CoderParser


class Step3p5Parser(Qwen3CoderParser):
    name = "step3p5"
    vllm_names = ("step3p5",)
    families = ("Step-3.5-Flash", "Step-3.7-Flash")
    model_patterns = (r"step-?3\.[5-9]", r"step3p[5-9]")
    template_markers = ("<|im_start|>tool_response",)
    priority = 2  # the Step template also carries the qwen3_coder marker
