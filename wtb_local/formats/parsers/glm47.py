"""GLM-4.7, GLM-4.7-Flash and GLM-5 / 5.1 / 5.2 (vLLM serves them all with `glm47`): the GLM-4.5 call format
(formats/parsers/glm45.py) written without the newline after the name,

    <tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value></tool_call>

and `<tool_call>NAME</tool_call>` for a call without arguments; the GLM-4.5 layout with newlines is read as
well. Values are raw text typed by the tool schema. The generation prompt pre-fills `<think>` unless thinking
is switched off (`enable_thinking=false`, which pre-fills `</think>`).
"""

from __future__ import annotations

import json
from typing import ClassVar

from wtb_local.contract.schema import ParsedCall
from wtb_local.formats.parsers.glm45 import CLOSE, OPEN, Glm45Parser


def arg_pairs(arguments: str, separator: str = "") -> str:
    """`<arg_key>K</arg_key>…<arg_value>V</arg_value>` for each argument: strings raw, other values JSON."""
    try:
        args = json.loads(arguments)
    except ValueError:
        args = {}
    return "".join(
        f"<arg_key>{k}</arg_key>{separator}<arg_value>"
        f"{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}</arg_value>{separator}"
        for k, v in (args.items() if isinstance(args, dict) else []))


class Glm47Parser(Glm45Parser):
    name = "glm47"
    vllm_names: ClassVar[tuple[str, ...]] = ("glm47",)
    families: ClassVar[tuple[str, ...]] = ("GLM-4.7", "GLM-4.7-Flash", "GLM-5", "GLM-5.1", "GLM-5.2")
    model_patterns: ClassVar[tuple[str, ...]] = (r"glm-4\.7", r"glm4\.7", r"glm-5", r"glm5")
    # its template shows the call layout with no newline after the name (GLM-4.5/4.6's has one)
    template_markers: ClassVar[tuple[str, ...]] = ("<tool_call>{function-name}<arg_key>",)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        head = f"<think>{reasoning}</think>" if reasoning is not None else ""
        calls = "".join(f"{OPEN}{c.name}{arg_pairs(c.arguments)}{CLOSE}" for c in tool_calls)
        return head + (content or "") + calls
