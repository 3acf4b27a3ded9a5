"""DeepSeek-V3 / R1 parser: conformance suite plus the family's own layouts and failure modes."""

from __future__ import annotations

import json

from tests.parsers.conformance import TOOLS, ParserConformance, call
from wtb_local.formats.parsers import get_parser, select_parser

B, E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CB, CE, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


def entry(name: str, args: str) -> str:
    return f"{CB}function{SEP}{name}\n```json\n{args}\n```{CE}"


class DeepSeekFamilyCases:
    """Malformed samples shared by the V3 and R1 classes (same call syntax)."""

    def malformed_samples(self) -> dict[str, str]:
        return {
            "bad_json": B + entry("get_weather", '{"city": "Paris"') + E,
            "no_call_begin": f'{B}function{SEP}get_weather\n```json\n{{"city": "Paris"}}\n```{E}',
            "no_separator": f'{B}{CB}function get_weather\n```json\n{{}}\n```{CE}{E}',
            "no_name": B + entry("", "{}") + E,
            "stray_marker": f"I will call{SEP} now",
        }

    def bad_then_good_sample(self) -> str:
        return B + entry("get_weather", "{'city': Paris}") + "\n" + entry("search", '{"query": "good"}') + E


class TestDeepSeekV3(DeepSeekFamilyCases, ParserConformance):
    parser_name = "deepseek_v3"

    def test_arguments_kept_as_written(self) -> None:
        raw = '{"city":"Paris",  "unit" : "c"}'
        result = self.parse(B + entry("get_weather", raw) + E)
        assert [c.arguments for c in result.tool_calls] == [raw]

    def test_ascii_lookalike_markers(self) -> None:
        text = '<|tool▁calls▁begin|><|tool_call_begin|>function<|tool_sep|>get_weather\n```json\n{"city": "Rome"}\n```<|tool_call_end|><|tool_calls_end|>'
        result = self.parse(text)
        assert result.errors == [] and [c.name for c in result.tool_calls] == ["get_weather"]

    def test_v31_layout_also_read(self) -> None:
        result = self.parse(f'{B}{CB}search{SEP}{{"query": "x"}}{CE}{E}')
        assert [(c.name, c.arguments) for c in result.tool_calls] == [("search", '{"query": "x"}')]

    def test_unclosed_section_at_normal_stop_keeps_calls_with_an_error(self) -> None:
        result = self.parse(B + entry("search", '{"query": "x"}'), finish_reason="stop")
        assert result.errors == ["no <｜tool▁calls▁end｜> (an unterminated section); calls kept"]
        assert [c.name for c in result.tool_calls] == ["search"]

    def test_cut_after_complete_call_is_reported(self) -> None:
        result = self.parse(B + entry("search", '{"query": "x"}'), finish_reason="length")
        assert [c.name for c in result.tool_calls] == ["search"]
        assert "truncated tool call" in result.errors

    def test_no_reasoning_without_tags(self) -> None:
        result = self.parse("Plain answer.")
        assert result.reasoning is None and result.content == "Plain answer."

    def test_selection(self) -> None:
        assert select_parser("deepseek-ai/DeepSeek-V3-0324") == "deepseek_v3"
        assert select_parser("deepseek-ai/DeepSeek-V3") == "deepseek_v3"


class TestDeepSeekR1(DeepSeekFamilyCases, ParserConformance):
    parser_name = "deepseek_r1"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        # After the (pre-filled) thinking block: markup inside the reasoning is not a call attempt.
        return {case: "</think>" + text for case, text in super().malformed_samples().items()}

    def test_completion_starts_inside_think(self) -> None:
        result = self.parse("The user wants Paris.\n</think>\n\n" + B + entry("get_weather", '{"city": "Paris"}') + E)
        assert result.reasoning == "The user wants Paris."
        assert result.content is None and [c.name for c in result.tool_calls] == ["get_weather"]

    def test_cut_while_thinking_is_reasoning(self) -> None:
        result = self.parse("Still thinking about", finish_reason="length")
        assert result.reasoning == "Still thinking about" and result.content is None
        assert result.tool_calls == [] and result.errors == []

    def test_call_without_closing_think_ends_reasoning(self) -> None:
        result = self.parse("Need weather." + B + entry("get_weather", '{"city": "Oslo"}') + E)
        assert result.reasoning == "Need weather."
        assert [json.loads(c.arguments) for c in result.tool_calls] == [{"city": "Oslo"}]

    def test_selection(self) -> None:
        for model in ("deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-R1-0528",
                      "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"):
            assert select_parser(model) == "deepseek_r1"

    def test_tools_do_not_change_json_calls(self) -> None:
        text = B + entry("search", '{"limit": "3", "query": "x"}') + E
        got = get_parser("deepseek_r1").parse("</think>" + text, tools=TOOLS)
        assert [c.arguments for c in got.tool_calls] == ['{"limit": "3", "query": "x"}']


def test_call_helper_is_json() -> None:
    assert json.loads(call("f", {"a": 1}).arguments) == {"a": 1}
