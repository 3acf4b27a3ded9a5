"""StepFun Step3 (vLLM and SGLang `step3`): StepTML invokes inside DeepSeek-style call tokens,

    <｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="NAME">
    <steptml:parameter name="KEY">value</steptml:parameter>
    </steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>

Values are raw text typed by the tool schema (kept byte for byte when a string); reasoning ends at
`</think>`. Step-3.5 and later write Qwen3-Coder XML (`step3p5`).
"""

from __future__ import annotations

import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import arguments_object, join_content, split_reasoning
from wtb_local.formats.parsers._xml_calls import XmlSyntax, format_value, parse_wrapped_calls
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens

OPEN, CLOSE = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"
CALL_OPEN, CALL_CLOSE, SEP = "<｜tool_call_begin｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>"
_CALL_MARKUP = re.compile(re.escape(CALL_OPEN) + r"\s*function\s*" + re.escape(SEP) + "|" + re.escape(CALL_CLOSE))
SYNTAX = XmlSyntax(function_open=re.compile(r'<steptml:invoke\s+name\s*=\s*"([^"]*)"\s*>'),
                   function_close="</steptml:invoke>",
                   param_open=re.compile(r'<steptml:parameter\s+name\s*=\s*"([^"]*)"\s*>'),
                   param_close="</steptml:parameter>", strip_one_newline=False)


class Step3Parser(ToolParser):
    name = "step3"
    vllm_names: ClassVar[tuple[str, ...]] = ("step3",)
    families = ("Step3",)
    model_patterns = (r"(^|/)step-?3(?![.\dp])",)
    template_markers = ("<steptml:invoke",)
    priority = 1

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "")
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"), call_markers=(OPEN,))
        rest = _CALL_MARKUP.sub("", rest)
        pieces, calls, errors = parse_wrapped_calls(rest, tools, finish_reason, open_tag=OPEN, close_tag=CLOSE,
                                                    syntax=SYNTAX, bare_open="<steptml:invoke",
                                                    bare_close="</steptml:invoke>")
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        head = f"<think>{reasoning}</think>" if reasoning is not None else ""
        if not tool_calls:
            return head + (content or "")
        calls = "".join(
            f'{CALL_OPEN}function{SEP}<steptml:invoke name="{c.name}">'
            + "".join(f'<steptml:parameter name="{k}">{format_value(v)}</steptml:parameter>'
                      for k, v in (arguments_object(c.arguments) or {}).items())
            + f"</steptml:invoke>{CALL_CLOSE}" for c in tool_calls)
        return head + (content or "") + OPEN + calls + CLOSE


