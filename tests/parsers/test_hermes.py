"""Hermes / Qwen parser: conformance plus family cases."""

from __future__ import annotations

from typing import Any, ClassVar

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser
from wtb_local.formats.parsers.hermes import strip_end_tokens


class TestHermes(ParserConformance):
    parser_name = "hermes"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "missing_brace": '<tool_call>\n{"name": "search", "arguments": {"query": "x"}\n</tool_call>',
            "not_json": "<tool_call>\nsearch(query='x')\n</tool_call>",
            "single_quotes": "<tool_call>{'name': 'search', 'arguments': {'query': 'x'}}</tool_call>",
            "empty_block": "<tool_call>\n</tool_call>",
        }

    def bad_then_good_sample(self) -> str:
        return (
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>\n'
            '<tool_call>\n{"name": "search", "arguments": {"query": "good"}}\n</tool_call>'
        )


class TestHermesThinkingOn(TestHermes):
    parser_options: ClassVar[dict[str, Any]] = {"thinking": True}


def test_arguments_text_kept_as_written() -> None:
    raw = '<tool_call>\n{"name": "f", "arguments": {"b":2,   "a": "\\u00e9"}}\n</tool_call>'
    result = get_parser("hermes").parse(raw)
    assert result.tool_calls[0].arguments == '{"b":2,   "a": "\\u00e9"}'


def test_broken_block_recovers_name_with_raw_arguments() -> None:
    result = get_parser("hermes").parse(
        '<tool_call>\n{"name": "search", "arguments": {"query": "x"\n</tool_call>'
    )
    assert [c.name for c in result.tool_calls] == ["search"]
    assert result.tool_calls[0].arguments == '{"query": "x"'
    assert result.errors


def test_thinking_modes() -> None:
    text = 'I should search.\n<tool_call>\n{"name": "search", "arguments": {}}\n</tool_call>'
    on = get_parser("hermes", thinking=True).parse(text)
    assert on.reasoning == "I should search." and on.content is None and len(on.tool_calls) == 1
    auto = get_parser("hermes").parse(text)
    assert auto.reasoning is None and auto.content == "I should search."
    off = get_parser("hermes", thinking=False).parse("<think>\n\n</think>\n\nHello")
    assert off.reasoning is None and off.content == "Hello"


def test_calls_inside_unclosed_think_end_reasoning() -> None:
    text = (
        '<think>Let me call it.\n<tool_call>\n{"name": "search", "arguments": {"query": "q"}}\n</tool_call>'
    )
    result = get_parser("hermes").parse(text)
    assert result.reasoning == "Let me call it." and [c.name for c in result.tool_calls] == ["search"]


def test_string_arguments_are_unwrapped() -> None:
    result = get_parser("hermes").parse('<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>')
    assert result.tool_calls[0].arguments == '{"a": 1}'


def test_end_tokens_stripped() -> None:
    assert strip_end_tokens("Hi<|im_end|>\n<|endoftext|>") == "Hi"
    assert get_parser("hermes").parse("Hello<|im_end|>").content == "Hello"


def test_block_without_arguments_is_a_call_without_arguments() -> None:
    result = get_parser("hermes").parse('<tool_call>\n{"name": "get_time"}\n</tool_call>')
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("get_time", "{}")] and result.errors == []
