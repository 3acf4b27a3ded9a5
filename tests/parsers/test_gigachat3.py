"""GigaChat3 parser: conformance plus both generations' call markers."""

from __future__ import annotations

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser


class TestGigaChat3(ParserConformance):
    parser_name = "gigachat3"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "not_json": "<|function_call|>get_weather(city=Paris)",
            "broken_object": '<|function_call|>{"name": "search", "arguments": {"query": }}',
        }

    def bad_then_good_sample(self) -> str:
        return ('<|function_call|>{"name": "get_weather", "arguments": {"city": }}'
                '<|function_call|>{"name": "search", "arguments": {"query": "good"}}')


def test_both_generations() -> None:

    v31 = 'Checking.<|function_call|>{"name": "search", "arguments": {"query": "x"}}<|message_sep|>'
    v3 = 'Checking.<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "search", "arguments": {"query": "x"}}'
    for text in (v31, v3):
        result = get_parser("gigachat3").parse(text)
        assert ([(c.name, c.arguments) for c in result.tool_calls], result.content, result.errors) == (
            [("search", '{"query": "x"}')], "Checking.", []), text
