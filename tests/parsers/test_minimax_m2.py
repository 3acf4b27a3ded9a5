"""MiniMax-M2 parser: conformance suite plus typing, markup in values and its pre-filled thinking."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser, select_parser

OPEN, CLOSE = "<minimax:tool_call>", "</minimax:tool_call>"


def invoke(name: str, params: dict[str, str]) -> str:
    inner = "".join(f'<parameter name="{k}">{v}</parameter>' for k, v in params.items())
    return f'<invoke name="{name}">{inner}</invoke>'


class TestMiniMaxM2(ParserConformance):
    parser_name = "minimax_m2"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "no_invoke": f"</think>{OPEN}get_weather(city=Paris){CLOSE}",
            "nameless_invoke": f'</think>{OPEN}<invoke name=""><parameter name="city">Paris</parameter></invoke>{CLOSE}',
            "unclosed_block": f"</think>{OPEN}" + invoke("get_weather", {"city": "Paris"}),
        }

    def bad_then_good_sample(self) -> str:
        return (f'</think>{OPEN}<invoke name=""><parameter name="x">1</parameter></invoke>'
                + invoke("search", {"query": "good"}) + CLOSE)

    def test_values_kept_exactly_and_typed(self) -> None:
        text = f"</think>{OPEN}" + invoke("search", {"query": " <div>Hi</div> ", "limit": "5"}) + CLOSE
        result = self.parse(text)
        assert json.loads(result.tool_calls[0].arguments) == {"query": " <div>Hi</div> ", "limit": 5}

    def test_nullable_and_enum_none(self) -> None:
        tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
            "nick": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "theme": {"type": "string", "enum": ["dark", "none"]}}}}}]
        result = self.parse(f"</think>{OPEN}" + invoke("f", {"nick": "null", "theme": "none"}) + CLOSE, tools=tools)
        assert json.loads(result.tool_calls[0].arguments) == {"nick": None, "theme": "none"}

    def test_completion_starts_inside_think(self) -> None:
        result = self.parse("Reasoning in progress", finish_reason="length")
        assert result.reasoning == "Reasoning in progress" and result.content is None

    def test_call_without_any_think_close_keeps_prose_as_content(self) -> None:
        result = self.parse("Let me check. " + OPEN + invoke("get_weather", {"city": "Paris"}) + CLOSE)
        assert result.reasoning is None and result.content == "Let me check."
        assert [c.name for c in result.tool_calls] == ["get_weather"]

    def test_thinking_off_option(self) -> None:
        assert get_parser("minimax_m2", thinking=False).parse("Answer.").content == "Answer."

    def test_selection(self) -> None:
        assert select_parser("MiniMaxAI/MiniMax-M2") == "minimax_m2"

    def test_invoke_without_wrapper(self) -> None:
        result = self.parse("</think>" + invoke("search", {"query": "x"}))
        assert [c.name for c in result.tool_calls] == ["search"] and result.content is None
