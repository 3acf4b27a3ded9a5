"""FunctionGemma parser: conformance suite, schema typing of escaped values, pairs without commas."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser, select_parser

E = "<escape>"
SEARCH = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {
    "query": {"type": "string"}, "limit": {"type": "integer"}, "exact": {"type": "boolean"}}}}}]


def calls(text: str, tools=None) -> list[tuple[str, dict]]:
    result = get_parser("functiongemma").parse(text, tools=tools, finish_reason="stop")
    assert result.errors == [], result
    return [(c.name, json.loads(c.arguments)) for c in result.tool_calls]


class TestFunctionGemma(ParserConformance):
    parser_name = "functiongemma"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "unclosed_object": f"<start_function_call>call:get_weather{{city:{E}Paris{E}<end_function_call>",
            "no_name": f"<start_function_call>call:{{city:{E}Paris{E}}}<end_function_call>",
            "no_braces": "<start_function_call>call:get_weather city<end_function_call>",
        }

    def bad_then_good_sample(self) -> str:
        return (f"<start_function_call>call:get_weather{{city:{E}Paris<end_function_call>"
                f"<start_function_call>call:search{{query:{E}good{E}}}<end_function_call>")

    def test_selection(self) -> None:
        assert select_parser("google/functiongemma-270m-it") == "functiongemma"

    def test_escaped_values_typed_by_the_schema(self) -> None:
        text = f"<start_function_call>call:search{{query:{E}42{E},limit:{E}10{E},exact:{E}true{E}}}<end_function_call>"
        assert calls(text, SEARCH) == [("search", {"query": "42", "limit": 10, "exact": True})]

    def test_escaped_values_without_a_schema_read_as_vllm_does(self) -> None:
        text = f"<start_function_call>call:search{{query:{E}42{E},limit:{E}1.5{E},exact:{E}false{E}}}<end_function_call>"
        assert calls(text) == [("search", {"query": 42, "limit": 1.5, "exact": False})]

    def test_pairs_without_commas(self) -> None:
        # the vLLM streaming tests write pairs without a comma and expect the whole object
        text = f"<start_function_call>call:get_weather{{city:{E}NYC{E}unit:{E}celsius{E}}}<end_function_call>"
        assert calls(text) == [("get_weather", {"city": "NYC", "unit": "celsius"})]
