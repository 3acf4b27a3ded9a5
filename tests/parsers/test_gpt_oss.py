"""gpt-oss (Harmony) parser: conformance suite plus channels, preambles, filler and text-only decoding."""

from __future__ import annotations

import json
from typing import ClassVar

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import parse_completion, select_parser

CALL = "<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{args}<|call|>"


class TestGptOss(ParserConformance):
    parser_name = "gpt_oss"
    supports_reasoning = True
    xfail_cases: ClassVar[dict[str, str]] = {
        "test_reasoning_prefilled_open_tag": "Harmony has no pre-filled reasoning tag: the prompt ends with "
                                             "<|start|>assistant and the model writes the analysis header",
        "test_call_inside_closed_reasoning_is_dropped_and_counted": "Harmony has no reasoning block a call could sit "
                                                                    "in: writing a call's header ends the analysis "
                                                                    "message (test_a_call_between_analysis_messages_"
                                                                    "is_a_call)",
    }

    def malformed_samples(self) -> dict[str, str]:
        return {
            "bad_json": CALL.format(name="get_weather", args='{"city": "Paris"'),
            "empty_recipient": CALL.format(name="", args="{}"),
            "cut_in_header": "<|channel|>commentary to=functions.get_weather <|constrain|>json",
        }

    def bad_then_good_sample(self) -> str:
        return (CALL.format(name="get_weather", args="{city: Paris}") + "<|start|>assistant"
                + CALL.format(name="search", args='{"query": "good"}'))

    def test_analysis_call_and_final(self) -> None:
        text = ("<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant"
                + CALL.format(name="get_weather", args='{"city":"SF"}'))
        result = self.parse(text)
        assert result.reasoning == "Need weather." and result.content is None
        assert [(c.name, c.arguments) for c in result.tool_calls] == [("get_weather", '{"city":"SF"}')]

    def test_a_call_between_analysis_messages_is_a_call(self) -> None:
        """docs/parser-policies.md §1: in Harmony, reasoning is a channel, not a block; a call message between
        two analysis messages is a call, and nothing is counted as a call inside reasoning."""
        text = ("<|channel|>analysis<|message|>Let me see.<|end|><|start|>assistant"
                + CALL.format(name="search", args='{"query": "inside"}')
                + "<|start|>assistant<|channel|>analysis<|message|>No, not yet.<|end|>"
                "<|start|>assistant<|channel|>final<|message|>Done.<|return|>")
        result = parse_completion(self.parser, text)
        assert result.reasoning == "Let me see.\nNo, not yet." and result.content == "Done."
        assert [(c.name, c.arguments) for c in result.tool_calls] == [("search", '{"query": "inside"}')]
        assert result.calls_in_reasoning == 0 and result.errors == []

    def test_preamble_is_content(self) -> None:
        text = ("<|channel|>commentary<|message|>Plan: look it up.<|end|><|start|>assistant"
                + CALL.format(name="search", args='{"query": "x"}'))
        result = self.parse(text)
        assert result.content == "Plan: look it up." and [c.name for c in result.tool_calls] == ["search"]

    def test_filler_between_calls_dropped(self) -> None:
        text = (CALL.format(name="a", args="{}") + "commentary" + CALL.format(name="b", args='{"x": 1}'))
        result = self.parse(text)
        assert result.content is None and [c.name for c in result.tool_calls] == ["a", "b"]

    def test_recipient_before_channel_and_analysis_channel_calls(self) -> None:
        text = ('<|start|>assistant to=functions.search<|channel|>commentary json<|message|>{"query": "a"}<|call|>'
                '<|start|>assistant<|channel|>analysis to=functions.search<|message|>{"query": "b"}<|call|>')
        result = self.parse(text)
        assert [json.loads(c.arguments) for c in result.tool_calls] == [{"query": "a"}, {"query": "b"}]

    def test_stop_token_stripped_after_call(self) -> None:
        result = self.parse('<|channel|>commentary to=functions.search <|constrain|>json<|message|>{"query": "x"}')
        assert result.errors == [] and [c.name for c in result.tool_calls] == ["search"]

    def test_special_tokens_skipped_text_strategy(self) -> None:
        result = self.parse("analysisThe user greets.assistantfinalHello!")
        assert result.reasoning == "The user greets." and result.content == "Hello!"

    def test_selection(self) -> None:
        assert select_parser("openai/gpt-oss-20b") == "gpt_oss"
        assert select_parser("openai/gpt-oss-120b") == "gpt_oss"

    def test_call_with_special_tokens_skipped(self) -> None:
        result = self.parse('analysisNeed data.assistantcommentary to=functions.search json{"query": "x"}')
        assert result.reasoning == "Need data."
        assert [(c.name, c.arguments) for c in result.tool_calls] == [("search", '{"query": "x"}')]
        cut = self.parse('assistantcommentary to=functions.search json{"query": "x', finish_reason="length")
        assert cut.tool_calls == [] and cut.errors == ["truncated tool call"]
