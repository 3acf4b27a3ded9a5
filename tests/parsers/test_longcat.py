"""LongCat parser: conformance plus its own tags."""

from __future__ import annotations

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser


class TestLongcat(ParserConformance):
    parser_name = "longcat"
    supports_reasoning = True
    reasoning_open_tag = "<longcat_think>"
    reasoning_close_tag = "</longcat_think>"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "not_json": "<longcat_tool_call>get_weather(city=Paris)</longcat_tool_call>",
            "string_arguments": '<longcat_tool_call>{"name": "search", "arguments": "x"}</longcat_tool_call>',
        }

    def bad_then_good_sample(self) -> str:
        return ('<longcat_tool_call>{"name": "get_weather", "arguments": {"city": }</longcat_tool_call>\n'
                '<longcat_tool_call>{"name": "search", "arguments": {"query": "good"}}</longcat_tool_call>')


def test_call_and_reasoning() -> None:
    import json

    text = ('<longcat_think>Need it.</longcat_think>Sure.\n<longcat_tool_call>{"name": "search", "arguments": '
            '{"query": "x"}}</longcat_tool_call>')
    result = get_parser("longcat").parse(text)
    assert ([(c.name, json.loads(c.arguments)) for c in result.tool_calls], result.reasoning, result.content,
            result.errors) == ([("search", {"query": "x"})], "Need it.", "Sure.", [])
