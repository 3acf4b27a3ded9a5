"""IQuest-Q1 (SGLang-only `iquest_q1`): GLM-4.7's argument pairs inside `<iquest_tool_call>`,

    <iquest_tool_call>NAME
    <arg_key>KEY</arg_key><arg_value>VALUE</arg_value>
    </iquest_tool_call>

String values are kept exactly as written (spaces, quotes and newlines included); other values are typed
by the tool schema, a local `$ref` resolved first. A block whose pairs do not balance is no call: it stays
in the content with an error, and the calls next to it are read (as SGLang does). Reasoning: `<think>`.
The stop token `<|iquest_end|>` is an end-of-turn marker (formats/end_of_turn.py).
"""

from __future__ import annotations

from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._schema_refs import inline_refs
from wtb_local.formats.parsers.glm47 import Glm47Parser, arg_pairs

OPEN, CLOSE = "<iquest_tool_call>", "</iquest_tool_call>"


class IQuestQ1Parser(Glm47Parser):
    name = "iquest_q1"
    vllm_names: ClassVar[tuple[str, ...]] = ()
    families: ClassVar[tuple[str, ...]] = ("IQuest-Q1",)
    model_patterns: ClassVar[tuple[str, ...]] = (r"iquest-?q1", r"iquestlab/")
    template_markers: ClassVar[tuple[str, ...]] = (OPEN,)
    priority = 2
    open_tag = OPEN
    close_tag = CLOSE
    unbalanced_is_text = True

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        return super().parse(text, tools=inline_refs(tools), finish_reason=finish_reason)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        head = f"<think>{reasoning}</think>" if reasoning is not None else ""
        calls = "".join(f"{OPEN}{c.name}\n{arg_pairs(c.arguments, separator=chr(10))}{CLOSE}" for c in tool_calls)
        return head + (content or "") + calls
