"""rednote dots (dots.llm, dots3; vLLM and SGLang `dots`): invokes inside `<dots_function_call>` blocks,

    <dots_function_call>
    <invoke name="NAME">
    <parameter name="KEY">value</parameter>
    </invoke>
    </dots_function_call>

a reply may hold several blocks, each with several invokes; a block may instead hold one JSON call object
`{"name", "arguments"}` (its arguments text kept as written). XML values are raw text typed by the tool
schema, local `$ref`s resolved first (formats/parsers/_schema_refs.py). A closing tag with no block open is
markup and leaves the content. A call to a tool the request did not offer is kept (docs/parser-policies.md:
unknown tools kept; vLLM leaves the block as content).
"""

from __future__ import annotations

import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import arguments_object, join_content, split_reasoning
from wtb_local.formats.parsers._schema_refs import inline_refs
from wtb_local.formats.parsers._xml_calls import XmlSyntax, format_value, parse_wrapped_calls
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import json_block_calls, strip_end_tokens

OPEN, CLOSE = "<dots_function_call>", "</dots_function_call>"
SYNTAX = XmlSyntax(function_open=re.compile(r"""<invoke\s+name\s*=\s*["']?([^"'>]*)["']?\s*>"""),
                   function_close="</invoke>",
                   param_open=re.compile(r"""<parameter\s+name\s*=\s*["']?([^"'>]*)["']?\s*>"""))


class DotsParser(ToolParser):
    name = "dots"
    vllm_names: ClassVar[tuple[str, ...]] = ("dots",)
    families = ("dots.llm", "dots3 (dots3-note-prev)")
    model_patterns = (r"dots-studio/", r"rednote-hilab/dots", r"(^|/)dots\.?(llm|3)")
    template_markers = (OPEN,)
    priority = 2

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "")
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"), call_markers=(OPEN,))
        pieces, calls, errors = parse_wrapped_calls(rest, inline_refs(tools), finish_reason, open_tag=OPEN,
                                                    close_tag=CLOSE, syntax=SYNTAX, json_fallback=json_block_calls)
        pieces = [piece.replace(CLOSE, "") for piece in pieces]  # a closer with no block open is markup
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        head = f"<think>{reasoning}</think>" if reasoning is not None else ""
        if not tool_calls:
            return head + (content or "")
        invokes = "".join(
            f'<invoke name="{c.name}">\n'
            + "".join(f'<parameter name="{k}">{format_value(v)}</parameter>\n'
                      for k, v in (arguments_object(c.arguments) or {}).items())
            + "</invoke>\n" for c in tool_calls)
        return head + (content or "") + f"{OPEN}\n{invokes}{CLOSE}"
