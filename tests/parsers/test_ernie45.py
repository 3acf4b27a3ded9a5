"""ERNIE 4.5 parser: conformance suite (Hermes blocks), the closing `</think>` of the Thinking models."""

from __future__ import annotations

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser, select_parser


class TestErnie45(ParserConformance):
    parser_name = "ernie45"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"not_json": "<tool_call>\nget_weather(city='Paris')\n</tool_call>",
                "broken_json": '<tool_call>\n{"name": "get_weather", "arguments": {city: Paris}}\n</tool_call>'}

    def bad_then_good_sample(self) -> str:
        return ('<tool_call>\n{"name": "get_weather", "arguments": {city: Paris}}\n</tool_call>\n'
                '<tool_call>\n{"name": "search", "arguments": {"query": "good"}}\n</tool_call>')

    def test_selection(self) -> None:
        assert select_parser("baidu/ERNIE-4.5-21B-A3B-Thinking") == "ernie45"
        assert select_parser("baidu/ERNIE-4.5-300B-A47B-PT") == "ernie45"
        assert select_parser("/m", config={"model_type": "ernie4_5_moe"}) == "ernie45"

    def test_reasoning_closed_without_its_opening_tag(self) -> None:
        # the tool parser alone returned the reasoning and `</think>` as content
        text = ("Two tools.\n</think>\n\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n")
        result = get_parser("ernie45").parse(text)
        assert (result.reasoning, result.content, [c.name for c in result.tool_calls]) == ("Two tools.", None, ["a"])
