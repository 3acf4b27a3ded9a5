"""Hunyuan-A13B parser: conformance suite plus its think/answer layout."""

from __future__ import annotations

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import select_parser


class TestHunyuan(ParserConformance):
    parser_name = "hunyuan"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "bad_json": '<tool_calls>[{"name": "get_weather", "arguments": {"city": Paris}}]</tool_calls>',
            "not_a_list": "<tool_calls>get_weather(city='Paris')</tool_calls>",
            "unclosed": '<answer>\n<tool_calls>[{"name": "get_weather", "arguments": {"city": "Pa',
        }

    def bad_then_good_sample(self) -> str:
        return ('<tool_calls>[{"name": "get_weather", "arguments": {city}}, '
                '{"name": "search", "arguments": {"query": "good"}}]</tool_calls>')

    def test_think_and_answer_blocks(self) -> None:
        result = self.parse("<think>\nWeigh it.\n</think>\n<answer>\nThe rest\n</answer>")
        assert result.reasoning == "Weigh it." and result.content == "The rest"

    def test_fast_thinking_empty_block(self) -> None:
        result = self.parse("<think>\n\n</think>\n<answer>\nHi\n</answer>")
        assert result.reasoning is None and result.content == "Hi"

    def test_call_inside_answer(self) -> None:
        result = self.parse('<answer>\n<tool_calls>[{"name": "search", "arguments": {"query": "x"}}]</tool_calls>\n</answer>')
        assert result.content is None and [c.arguments for c in result.tool_calls] == ['{"query": "x"}']

    def test_selection(self) -> None:
        assert select_parser("tencent/Hunyuan-A13B-Instruct") == "hunyuan"

    def test_assistant_prefix_is_layout(self) -> None:
        result = self.parse("<think>\n\n</think>\n<answer>\n助手：今天是晴天。\n</answer>")
        assert result.content == "今天是晴天。"
        assert self.parse("Text mentioning 助手：inside.").content == "Text mentioning 助手：inside."
