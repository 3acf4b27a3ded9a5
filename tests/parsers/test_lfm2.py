"""LFM2 / LFM2.5 parser: conformance suite, dotted names, Python and JSON literals, broken items."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser, select_parser


class TestLfm2(ParserConformance):
    parser_name = "lfm2"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "positional": "<|tool_call_start|>[get_weather('Paris')]<|tool_call_end|>",
            "not_a_call": "<|tool_call_start|>[the weather]<|tool_call_end|>",
            "unclosed": "<|tool_call_start|>[get_weather(city='Paris'",
            "empty": "<|tool_call_start|><|tool_call_end|>",
        }

    def bad_then_good_sample(self) -> str:
        return "<|tool_call_start|>[get_weather(city=Paris Rome), search(query=\"good\")]<|tool_call_end|>"

    def test_selection(self) -> None:
        assert select_parser("LiquidAI/LFM2-1.2B") == "lfm2"
        assert select_parser("LiquidAI/LFM2-8B-A1B") == "lfm2"
        assert select_parser("LiquidAI/LFM2.5-1.2B-Instruct") == "lfm2"
        assert select_parser("/m", config={"model_type": "lfm2_moe"}) == "lfm2"

    def test_dotted_names_and_mixed_literals(self) -> None:
        text = ('<|tool_call_start|>[Calendar.create_event(title="demo", on=True, note=null, '
                "meta={\"a\": true})]<|tool_call_end|>")
        result = get_parser("lfm2").parse(text)
        assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == [
            ("Calendar.create_event", {"title": "demo", "on": True, "note": None, "meta": {"a": True}})]
        assert result.errors == []

    def test_brackets_in_prose_are_text(self) -> None:
        text = "Use this format: [link text](url)."
        assert get_parser("lfm2").parse(text).content == text
