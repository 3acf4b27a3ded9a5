"""Hy3 parser: conformance plus both token spellings."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.parsers import get_parser


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
