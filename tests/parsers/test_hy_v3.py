"""Hy3 parser: conformance plus both token spellings."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser


class TestHyV3(ParserConformance):
    parser_name = "hy_v3"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "no_name": "<tool_calls>\n<tool_call><tool_sep>\n<arg_key>q</arg_key>\n<arg_value>x</arg_value>\n</tool_call>\n</tool_calls>",
            "unbalanced": "<tool_calls>\n<tool_call>search<tool_sep>\n<arg_key>query</arg_key>\n<arg_value>x\n</tool_call>\n</tool_calls>",
        }

    def bad_then_good_sample(self) -> str:
        return ("<tool_calls>\n<tool_call><tool_sep>\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>\n"
                "<tool_call>search<tool_sep>\n<arg_key>query</arg_key>\n<arg_value>good</arg_value>\n</tool_call>\n</tool_calls>")


def test_both_token_spellings() -> None:
    plain = ("<think>Plan.</think>Checking.<tool_calls>\n<tool_call>search<tool_sep>\n<arg_key>query</arg_key>\n"
             "<arg_value>x</arg_value>\n</tool_call>\n</tool_calls>")
    suffixed = plain.replace("<think>", "<think:opensource>").replace("</think>", "</think:opensource>")
    for tag in ("tool_calls", "tool_call", "tool_sep", "arg_key", "arg_value"):
        suffixed = suffixed.replace(f"<{tag}>", f"<{tag}:opensource>").replace(f"</{tag}>", f"</{tag}:opensource>")
    suffixed += "<｜hy_eos:opensource｜>"
    for text in (plain, suffixed):
        result = get_parser("hy_v3").parse(text)
        assert ([(c.name, json.loads(c.arguments)) for c in result.tool_calls], result.reasoning, result.content,
                result.errors) == ([("search", {"query": "x"})], "Plan.", "Checking.", []), text


def test_an_unterminated_wrapper_keeps_the_calls_with_an_error() -> None:
    result = get_parser("hy_v3").parse("<tool_calls>\n<tool_call>get_time<tool_sep>\n</tool_call>\n")
    assert ([c.name for c in result.tool_calls], result.errors) == (
        ["get_time"], ["no </tool_calls> (an unterminated block); calls kept"])


def test_selection() -> None:
    from wtb_local.formats.parsers import select_parser

    assert [select_parser(m) for m in ("tencent/Hy3", "tencent/Hy3-preview", "tencent/Hunyuan-A13B-Instruct")] == [
        "hy_v3", "hy_v3", "hunyuan"]
