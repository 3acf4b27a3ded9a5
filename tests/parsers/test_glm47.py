"""GLM-4.7 / GLM-5.x parser: conformance plus the layouts and the upstream bug inputs."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser


class TestGlm47(ParserConformance):
    parser_name = "glm47"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "no_name": "<tool_call><arg_key>query</arg_key><arg_value>x</arg_value></tool_call>",
            "unbalanced": "<tool_call>search<arg_key>query</arg_key><arg_value>x</tool_call>",
            "missing_key_opener": "<tool_call>searchquery</arg_key><arg_value>x</arg_value></tool_call>",
        }

    def bad_then_good_sample(self) -> str:
        return ("<tool_call><arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
                "<tool_call>search<arg_key>query</arg_key><arg_value>good</arg_value></tool_call>")


def calls(result) -> list[tuple[str, dict]]:
    return [(c.name, json.loads(c.arguments)) for c in result.tool_calls]


def test_both_layouts_and_typing() -> None:
    from tests.parsers.conformance import TOOLS

    inline = "<tool_call>search<arg_key>query</arg_key><arg_value>007</arg_value><arg_key>limit</arg_key><arg_value>3</arg_value></tool_call>"
    newline = "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>007</arg_value>\n<arg_key>limit</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
    for text in (inline, newline):
        assert calls(get_parser("glm47").parse(text, tools=TOOLS)) == [("search", {"query": "007", "limit": 3})]


def test_selection_splits_glm_45_and_47() -> None:
    from wtb_local.formats.parsers import select_parser

    ids = ["zai-org/GLM-4.5", "zai-org/GLM-4.6", "zai-org/GLM-4.7", "zai-org/GLM-4.7-Flash", "zai-org/GLM-5",
           "zai-org/GLM-5.1", "zai-org/GLM-5.2-FP8"]
    assert [select_parser(m) for m in ids] == ["glm45", "glm45", "glm47", "glm47", "glm47", "glm47", "glm47"]


# --- the known upstream bugs: what wtb_local does with the same input ---------------------------------------


def test_inline_zero_argument_calls_next_to_others() -> None:
    """vllm#44326 (PRs #41654, #44327, #48131): streaming dropped inline zero-argument calls."""
    text = ("<tool_call>get_time</tool_call><tool_call>get_weather<arg_key>city</arg_key>"
            "<arg_value>Paris</arg_value></tool_call><tool_call>get_time</tool_call>")
    result = get_parser("glm47").parse(text)
    assert calls(result) == [("get_time", {}), ("get_weather", {"city": "Paris"}), ("get_time", {})]
    assert (result.content, result.errors) == (None, [])


def test_the_whole_name_is_read() -> None:
    """vllm#39757 (PR #40071): streaming truncated `run_in_terminal` to `run_in`."""
    text = "<tool_call>run_in_terminal<arg_key>command</arg_key><arg_value>ls -la</arg_value></tool_call>"
    assert calls(get_parser("glm47").parse(text)) == [("run_in_terminal", {"command": "ls -la"})]


def test_object_values_are_decoded_once() -> None:
    """PR #36410: arguments were serialised twice; an object value is an object, a string holding JSON text
    stays that string."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "o": {"type": "object"}, "s": {"type": "string"}}}}}]
    text = '<tool_call>f<arg_key>o</arg_key><arg_value>{"a": [1, 2]}</arg_value><arg_key>s</arg_key><arg_value>{"a": 1}</arg_value></tool_call>'
    result = get_parser("glm47").parse(text, tools=tools)
    assert result.tool_calls[0].arguments == '{"o": {"a": [1, 2]}, "s": "{\\"a\\": 1}"}'


def test_a_call_inside_think_is_counted_and_the_next_call_read() -> None:
    """vllm#42400 / #46040 (PR #45915): the glm45 reasoning parser swallowed a <tool_call> written inside
    <think>; wtb_local keeps it in the reasoning (counted, not executed) and reads the call after </think>."""
    from wtb_local.formats.parsers import parse_completion

    text = ("Try <tool_call>get_time</tool_call> first?</think>"
            "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Oslo</arg_value></tool_call>")
    result = parse_completion(get_parser("glm47", thinking=True), text, finish_reason="stop")
    assert (result.reasoning, calls(result), result.calls_in_reasoning) == (
        "Try <tool_call>get_time</tool_call> first?", [("get_weather", {"city": "Oslo"})], 1)


def test_a_missing_arg_key_opener_is_an_error_not_a_call() -> None:
    """PR #47190: `<tool_call>NAMEarg</arg_key>…` (the `<arg_key>` opener missing)."""
    text = "<tool_call>get_weathercity</arg_key><arg_value>Beijing</arg_value></tool_call>"
    result = get_parser("glm47").parse(text)
    assert (result.tool_calls, result.content, result.errors) == ([], text, ["tool call block without a function name"])
