"""Phi-4-mini parser: conformance suite plus the `functools[...]` specifics."""

from __future__ import annotations

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import select_parser


class TestPhi4Mini(ParserConformance):
    parser_name = "phi4_mini"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "unclosed_list": 'functools[{"name": "get_weather", "arguments": {"city": "Paris"}',
            "bad_json": 'functools[{"name": "get_weather", "arguments": {"city": Paris}}]',
            "non_object_item": 'functools["get_weather"]',
        }

    def bad_then_good_sample(self) -> str:
        return 'functools[{"name": "get_weather", "arguments": {city}}, {"name": "search", "arguments": {"query": "good"}}]'

    def test_empty_list_is_not_a_call(self) -> None:
        result = self.parse("functools[] This is just text")
        assert result.tool_calls == [] and result.errors == []
        assert result.content == "functools[] This is just text"

    def test_word_without_list_is_text(self) -> None:
        result = self.parse("Python's functools module helps.")
        assert result.tool_calls == [] and result.errors == [] and result.content

    def test_arguments_kept_as_written(self) -> None:
        result = self.parse('functools[{"name": "search", "arguments": {"query":"x" , "limit":2}}]')
        assert [c.arguments for c in result.tool_calls] == ['{"query":"x" , "limit":2}']

    def test_selection(self) -> None:
        assert select_parser("microsoft/Phi-4-mini-instruct") == "phi4_mini"
