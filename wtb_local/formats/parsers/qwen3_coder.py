"""Qwen3-Coder (and Qwen3.5) XML tool calls:

    <tool_call>
    <function=NAME>
    <parameter=KEY>
    value
    </parameter>
    </function>
    </tool_call>

Values are raw text typed by the offered tools' schema (strings stay strings; numbers, booleans, objects
and arrays are decoded once), so the arguments text is built with `dumps_arguments`. A `<function=…>`
element written without its `<tool_call>` wrapper still counts; a malformed `<function=` tag (no `>`)
is an error for that block only; a block holding Hermes-style JSON instead of XML is read as JSON (its
arguments text as written). Qwen3.5/3.6/3.8 and Nemotron 3 add a `<think>` block (pre-filled opening tag);
a call written before `</think>` is part of the reasoning (docs/parser-policies.md §1).
"""

from __future__ import annotations

import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import arguments_object, join_content, split_reasoning
from wtb_local.formats.parsers._xml_calls import XmlSyntax, format_value, parse_wrapped_calls
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import json_block_calls

SYNTAX = XmlSyntax(function_open=re.compile(r"<function=([^>\n]+)>"), function_close="</function>",
                   param_open=re.compile(r"<parameter=([^>\n]+)>"))


def function_text(call: ParsedCall, *, value_newlines: bool) -> str:
    """`<function=NAME>` + one `<parameter=…>` per argument + `</function>`, as the templates write it."""
    nl = "\n" if value_newlines else ""
    params = "".join(f"<parameter={key}>{nl}{format_value(value)}{nl}</parameter>\n"
                     for key, value in (arguments_object(call.arguments) or {}).items())
    return f"<function={call.name}>\n{params}</function>"


class Qwen3CoderParser(ToolParser):
    name = "qwen3_coder"
    vllm_names: ClassVar[tuple[str, ...]] = ("qwen3_coder",)
    families: ClassVar[tuple[str, ...]] = ("Qwen3-Coder", "Qwen3.5", "Qwen3.6", "Qwen3.8", "Nemotron 3 Nano/Ultra/Omni",
                                           "Nanbeige4.2")
    model_patterns: ClassVar[tuple[str, ...]] = (r"qwen3-coder", r"qwen3\.[5-9]", r"nemotron-3-(?:nano|ultra|omni)",
                                                 r"nanbeige")  # Nanbeige: SGLang serves it with the Qwen3-Coder detector
    # Qwen's templates join strings with +, Nemotron 3's with ~
    template_markers: ClassVar[tuple[str, ...]] = ("<function=' + tool_call.name", "<function=' ~ tool_call.name")
    priority = 1  # Qwen3-Coder ids also match the generic Qwen3 (hermes) patterns

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"),
                                          call_markers=("<tool_call>", "<function="))
        pieces, calls, errors = parse_wrapped_calls(rest, tools, finish_reason, open_tag="<tool_call>",
                                                    close_tag="</tool_call>", syntax=SYNTAX,
                                                    bare_open="<function=", bare_close="</function>",
                                                    json_fallback=json_block_calls)
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"<think>\n{reasoning}\n</think>\n\n" if reasoning else ""
        blocks = [f"<tool_call>\n{function_text(c, value_newlines=True)}\n</tool_call>" for c in tool_calls]
        return head + "\n".join(([content] if content else []) + blocks)
