"""Olmo 3 parser: conformance suite, newline-separated calls, a bad sibling kept with an error."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser, select_parser


class TestOlmo3(ParserConformance):
    parser_name = "olmo3"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "mismatched_brackets": "<function_calls>foo(x=1])</function_calls>",
            "positional": "<function_calls>get_weather('Paris')</function_calls>",
            "not_a_call": "<function_calls>get the weather</function_calls>",
            "unclosed": "<function_calls>get_weather(city='Paris')",
        }

    def bad_then_good_sample(self) -> str:
        return "<function_calls>get_weather(city=Paris Rome)\nsearch(query='good')</function_calls>"

    def test_selection(self) -> None:
        assert select_parser("allenai/Olmo-3-7B-Instruct") == "olmo3"
        assert select_parser("allenai/Olmo-3-32B-Think") == "olmo3"
        assert select_parser("/models/x", config={"architectures": ["Olmo3ForCausalLM"]}) == "olmo3"

    def test_a_call_spanning_lines(self) -> None:
        text = "<function_calls>register(name='Ann',\n  tags=['a',\n 'b'])\nget_time()</function_calls>"
        result = get_parser("olmo3").parse(text)
        assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == [
            ("register", {"name": "Ann", "tags": ["a", "b"]}), ("get_time", {})]
        assert result.errors == []

    def test_mismatched_brackets_are_one_error(self) -> None:
        # vLLM logged a mismatched-bracket stream once per chunk; here it is one error on the step
        result = get_parser("olmo3").parse("<function_calls>foo(x=1])</function_calls>")
        assert [(c.name, c.arguments) for c in result.tool_calls] == [("foo", "x=1]")]
        assert len(result.errors) == 1
