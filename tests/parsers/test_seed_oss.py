"""Seed-OSS parser: conformance suite plus its thinking block and budget notes."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser, select_parser

OPEN, CLOSE = "<seed:tool_call>", "</seed:tool_call>"


def block(name: str, params: str) -> str:
    return f"{OPEN}\n<function={name}>\n{params}</function>\n{CLOSE}"


class TestSeedOss(ParserConformance):
    parser_name = "seed_oss"
    supports_reasoning = True
    reasoning_open_tag = "<seed:think>"
    reasoning_close_tag = "</seed:think>"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "function_tag_without_gt": f"{OPEN}\n<function=get_weather\n</function>\n{CLOSE}",
            "no_function": f"{OPEN}\nget_weather(city='Paris')\n{CLOSE}",
        }

    def bad_then_good_sample(self) -> str:
        return f"{OPEN}\n<function=\n</function>\n{CLOSE}\n" + block("search", "<parameter=query>good</parameter>\n")

    def test_calls_quoted_in_thinking_are_not_calls(self) -> None:
        think = ("<seed:think>The format is " + block("get_weather", "<parameter=city>Rome</parameter>\n")
                 + "<seed:cot_budget_reflect>I have used 10 tokens.</seed:cot_budget_reflect></seed:think>")
        result = self.parse(think + block("get_weather", "<parameter=city>Paris</parameter>\n"))
        assert [json.loads(c.arguments) for c in result.tool_calls] == [{"city": "Paris"}]
        assert result.reasoning is not None and "Rome" in result.reasoning

    def test_tagless_reply_is_an_answer_unless_thinking_is_forced(self) -> None:
        assert self.parse("Direct answer.").content == "Direct answer."
        forced = get_parser("seed_oss", thinking=True).parse("cut while thinking", finish_reason="length")
        assert forced.reasoning == "cut while thinking" and forced.content is None

    def test_selection(self) -> None:
        assert select_parser("ByteDance-Seed/Seed-OSS-36B-Instruct") == "seed_oss"
