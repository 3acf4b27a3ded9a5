"""DeepSeek-V3.1 parser: conformance suite plus thinking on/off and its layout."""

from __future__ import annotations

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser, select_parser

B, E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CB, CE, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


class TestDeepSeekV31(ParserConformance):
    parser_name = "deepseek_v31"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "bad_json": f'{B}{CB}get_weather{SEP}{{"city": "Paris"{CE}{E}',
            "no_separator": f'{B}{CB}get_weather {{"city": "Paris"}}{CE}{E}',
            "empty_section": f"{B}{E}",
        }

    def bad_then_good_sample(self) -> str:
        return f'{B}{CB}get_weather{SEP}{{city: Paris}}{CE}{CB}search{SEP}{{"query": "good"}}{CE}{E}'

    def test_arguments_verbatim(self) -> None:
        result = self.parse(f'normal text{B}{CB}foo{SEP}{{"x":1}}{CE}{E}')
        assert result.content == "normal text"
        assert [(c.name, c.arguments) for c in result.tool_calls] == [("foo", '{"x":1}')]

    def test_thinking_off_tagless_reply_is_content(self) -> None:
        result = self.parse("Just an answer.")
        assert result.reasoning is None and result.content == "Just an answer."

    def test_thinking_on_option(self) -> None:
        result = get_parser("deepseek_v31", thinking=True).parse("cut while thinking", finish_reason="length")
        assert result.reasoning == "cut while thinking" and result.content is None

    def test_thinking_mode_completion(self) -> None:
        result = self.parse(f'Need the weather.</think>{B}{CB}get_weather{SEP}{{"city": "Oslo"}}{CE}{E}')
        assert result.reasoning == "Need the weather." and result.content is None
        assert [c.name for c in result.tool_calls] == ["get_weather"]

    def test_selection(self) -> None:
        assert select_parser("deepseek-ai/DeepSeek-V3.1") == "deepseek_v31"
        assert select_parser("deepseek-ai/DeepSeek-V3.1-Terminus") == "deepseek_v31"
