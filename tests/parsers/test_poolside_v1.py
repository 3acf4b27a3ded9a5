"""Poolside Laguna parser: conformance plus verbatim strings and names."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser


class TestPoolsideV1(ParserConformance):
    parser_name = "poolside_v1"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "blank_name": "<tool_call>   </tool_call>",
            "unbalanced": "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>x\n</tool_call>",
        }

    def bad_then_good_sample(self) -> str:
        return ("<tool_call>\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>\n"
                "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>good</arg_value>\n</tool_call>")


def test_strings_verbatim_other_types_stripped() -> None:
    """vllm #42026 pattern: indentation and trailing newlines of a string value are the value."""
    tools = [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
        "content": {"type": "string"}, "mode": {"type": "integer"}}}}}]
    text = "<tool_call>write_file\n<arg_key>content</arg_key>\n<arg_value>    def f():\n        return 1\n</arg_value>\n<arg_key>mode</arg_key>\n<arg_value> 420 </arg_value>\n</tool_call>"
    assert json.loads(get_parser("poolside_v1").parse(text, tools=tools).tool_calls[0].arguments) == {
        "content": "    def f():\n        return 1\n", "mode": 420}


def test_whitespace_padding_is_linear() -> None:
    """The quadratic regex on whitespace-padded calls (vLLM's poolside_v1 test): 200,000 spaces read at once."""
    import time

    text = "<tool_call>" + " " * 200_000 + "<x</tool_call>"
    started = time.perf_counter()
    result = get_parser("poolside_v1").parse(text)
    assert time.perf_counter() - started < 2.0
    assert (result.tool_calls, result.errors) == ([], ["tool call block without a function name"])


def test_names_with_inner_spaces_and_the_assistant_close() -> None:
    result = get_parser("poolside_v1").parse("</think>\n<tool_call>  get weather  <arg_key>city</arg_key>"
                                             "<arg_value>Paris</arg_value></tool_call>\n</assistant>")
    assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == [("get weather", {"city": "Paris"})]
    assert (result.content, result.errors) == (None, [])
