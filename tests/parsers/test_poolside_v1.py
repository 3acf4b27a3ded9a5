"""Poolside Laguna parser: conformance plus verbatim strings and names."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.parsers import get_parser


class TestPoolsideV1(ParserConformance):
    parser_name = "poolside_v1"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "blank_name": "<tool_call>   </tool_call>",
            "unbalanced": "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>x\n</tool_call>",
        }

    def bad_then_good_sample(self) -> str:
        return ("<tool_call>\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>\n"
                "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>good</arg_value>\n</tool_call>")
