"""Apertus parser: conformance suite, a missing `<|tools_suffix|>`, broken items kept."""

from __future__ import annotations

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser, select_parser


class TestApertus(ParserConformance):
    parser_name = "apertus"
    supports_reasoning = True
    reasoning_open_tag = "<|inner_prefix|>"
    reasoning_close_tag = "<|inner_suffix|>"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "not_a_list": '<|tools_prefix|>{"get_weather": {"city": "Paris"}}<|tools_suffix|>',
            "two_keys": '<|tools_prefix|>[{"get_weather": {"city": "Paris"}, "x": 1}]<|tools_suffix|>',
            "string_arguments": '<|tools_prefix|>[{"get_weather": "Paris"}]<|tools_suffix|>',
            "unclosed_list": '<|tools_prefix|>[{"get_weather": {"city": "Paris"}}',
        }

    def bad_then_good_sample(self) -> str:
        return '<|tools_prefix|>[{"get_weather": {city: Paris}}, {"search": {"query": "good"}}]<|tools_suffix|>'

    def test_selection(self) -> None:
        assert select_parser("swiss-ai/Apertus-8B-Instruct-2509") == "apertus"
        assert select_parser("swiss-ai/Apertus-70B-Instruct-2509") == "apertus"

    def test_missing_suffix_after_a_closed_list(self) -> None:
        result = get_parser("apertus").parse('<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]')
        assert [(c.name, c.arguments) for c in result.tool_calls] == [("get_weather", '{"city": "Paris"}')]
        assert result.errors == []

    def test_arguments_text_as_written(self) -> None:
        result = get_parser("apertus").parse('<|tools_prefix|>[{"f": {"a":1,  "b": [2]}}]<|tools_suffix|>')
        assert result.tool_calls[0].arguments == '{"a":1,  "b": [2]}'

    def test_truncated_json(self) -> None:
        # vLLM recovers a truncated item; here a cut at the token limit is an error, and an item left
        # unreadable at a normal stop keeps its name and raw text with an error
        text = '<|tools_prefix|>[{"a": {"x": 1}}, {"b": {"y": "zz'
        cut = get_parser("apertus").parse(text, finish_reason="length")
        assert ([c.name for c in cut.tool_calls], cut.errors) == (
            ["a"], ["truncated tool call: call list cut off at the token limit"])
        stopped = get_parser("apertus").parse(text, finish_reason="stop")
        assert [(c.name, c.arguments) for c in stopped.tool_calls] == [("a", '{"x": 1}'), ("b", '{"y": "zz')]
        assert stopped.errors == ["tool call item is not valid JSON: '{\"b\": {\"y\": \"zz'; arguments kept as raw text"]
