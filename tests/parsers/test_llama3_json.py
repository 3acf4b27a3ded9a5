"""Llama 3.x JSON parser: conformance plus family cases."""

from __future__ import annotations

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser


class TestLlama3Json(ParserConformance):
    parser_name = "llama3_json"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "unquoted_value": '{"name": "search", "parameters": {"query": x}}',
            "missing_brace": '<|python_tag|>{"name": "search", "parameters": {"query": "x"}',
            "single_quotes_key": '{"name": "search", "parameters": {\'query\': "x"}}',
        }

    def bad_then_good_sample(self) -> str:
        return (
            '{"name": "get_weather", "parameters": {"city": Paris}}; '
            '{"name": "search", "parameters": {"query": "good"}}'
        )


def parse(text: str, finish_reason: str | None = None):
    return get_parser("llama3_json").parse(text, finish_reason=finish_reason)


def test_python_tag_and_end_tokens() -> None:
    result = parse('<|python_tag|>{"name": "search", "parameters": {"query": "x"}}<|eom_id|>')
    assert [c.name for c in result.tool_calls] == ["search"] and result.content is None


def test_newline_separated_calls_keep_text_as_written() -> None:
    result = parse('{"name": "a", "parameters": {"x":1}}\n{"name": "b", "arguments": {}}')
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("a", '{"x":1}'), ("b", "{}")]


def test_json_without_call_keys_is_prose() -> None:
    result = parse('The config is {"name": "x", "size": 3}.')
    assert (
        result.tool_calls == []
        and result.errors == []
        and result.content == 'The config is {"name": "x", "size": 3}.'
    )


def test_list_of_calls() -> None:
    result = parse('[{"name": "a", "parameters": {}}, {"name": "b", "parameters": {"k": [1]}}]')
    assert [c.name for c in result.tool_calls] == ["a", "b"]


def test_truncated_single_call() -> None:
    result = parse('{"name": "search", "parameters": {"query": "abc', finish_reason="length")
    assert result.tool_calls == [] and result.errors == [
        "truncated tool call: the last call object was cut off at the token limit"
    ]
