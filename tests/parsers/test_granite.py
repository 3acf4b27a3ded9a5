"""Granite 3.x (`<|tool_call|>` list) and Granite 4 (Hermes-style blocks) parsers."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import select_parser


class TestGranite(ParserConformance):
    parser_name = "granite"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "unclosed_list": '<|tool_call|> [{"name": "func", "arguments": {',
            "bare_object": '<|tool_call|> {"name": "func", "arguments": {}}',
            "not_json": "<|tool_call|> get_weather(city='Paris')",
            "string_arguments": '<|tool_call|>[{"name": "func", "arguments": "not a dict"}]',
        }

    def bad_then_good_sample(self) -> str:
        return '<|tool_call|>[{"name": "get_weather", "arguments": {city: Paris}}, {"name": "search", "arguments": {"query": "good"}}]'

    def test_granite_31_string_marker(self) -> None:
        result = self.parse('<tool_call> [{"name": "search", "arguments": {"query": "x"}}]')
        assert result.errors == [] and [c.arguments for c in result.tool_calls] == ['{"query": "x"}']

    def test_list_without_marker_is_text(self) -> None:
        result = self.parse('Some text [{"name": "func"}]')
        assert result.tool_calls == [] and result.content == 'Some text [{"name": "func"}]'

    def test_thought_process_headers(self) -> None:
        result = self.parse("Here is my thought process: weigh it.\nHere is my response: Done.")
        assert result.reasoning == "weigh it." and result.content == "Done."

    def test_response_tags_unwrapped(self) -> None:
        result = self.parse("<think>hmm</think><response>Answer.</response>")
        assert result.reasoning == "hmm" and result.content == "Answer."

    def test_selection(self) -> None:
        assert select_parser("ibm-granite/granite-3.1-8b-instruct") == "granite"
        assert select_parser("ibm-granite/granite-3.3-2b-instruct") == "granite"


class TestGranite4(ParserConformance):
    parser_name = "granite4"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"bad_json": '<tool_call>\n{"name": "f", "arguments": {"a": }}\n</tool_call>',
                "not_a_call": "<tool_call>\nhello\n</tool_call>"}

    def bad_then_good_sample(self) -> str:
        return ('<tool_call>\n{"name": "get_weather", "arguments": {city}}\n</tool_call>\n'
                '<tool_call>\n{"name": "search", "arguments": {"query": "good"}}\n</tool_call>')

    def test_string_encoded_arguments_and_prose_between_calls(self) -> None:
        text = ('Here: \n<tool_call> {"name": "f", "arguments": "{\\"a\\": [1, 2]}"} </tool_call> then '
                '<tool_call> {"name": "g", "arguments": {"b": true}} </tool_call> done.<|end_of_text|>')
        result = self.parse(text)
        assert [json.loads(c.arguments) for c in result.tool_calls] == [{"a": [1, 2]}, {"b": True}]
        assert result.content == "Here: \n then  done."

    def test_selection(self) -> None:
        assert select_parser("ibm-granite/granite-4.0-h-tiny") == "granite4"
