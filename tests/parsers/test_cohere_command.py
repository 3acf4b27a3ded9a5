"""Cohere Command parser: conformance plus ids, text wrappers and vLLM's names."""

from __future__ import annotations

from tests.parsers.conformance import ParserConformance
from wtb_local.parsers import get_parser


class TestCohereCommand(ParserConformance):
    parser_name = "cohere_command"
    supports_reasoning = True
    reasoning_open_tag = "<|START_THINKING|>"
    reasoning_close_tag = "<|END_THINKING|>"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "not_a_list": "<|START_ACTION|>search(query=x)<|END_ACTION|>",
            "no_tool_name": '<|START_ACTION|>[{"tool_call_id": "0", "parameters": {}}]<|END_ACTION|>',
            "broken_object": '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "search", "parameters": {"query": }]<|END_ACTION|>',
        }

    def bad_then_good_sample(self) -> str:
        return ('<|START_ACTION|>[\n    {"tool_call_id": "0", "parameters": {"city": "Paris"}},\n'
                '    {"tool_call_id": "1", "tool_name": "search", "parameters": {"query": "good"}}\n]<|END_ACTION|>')
