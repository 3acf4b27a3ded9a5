"""GLM-4.7 / GLM-5.x parser: conformance plus the layouts and the upstream bug inputs."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.parsers import get_parser


class TestGlm47(ParserConformance):
    parser_name = "glm47"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "no_name": "<tool_call><arg_key>query</arg_key><arg_value>x</arg_value></tool_call>",
            "unbalanced": "<tool_call>search<arg_key>query</arg_key><arg_value>x</tool_call>",
            "missing_key_opener": "<tool_call>searchquery</arg_key><arg_value>x</arg_value></tool_call>",
        }

    def bad_then_good_sample(self) -> str:
        return ("<tool_call><arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
                "<tool_call>search<arg_key>query</arg_key><arg_value>good</arg_value></tool_call>")
