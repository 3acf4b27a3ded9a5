"""Qwen3-Coder XML parser: conformance suite plus schema typing and the upstream robustness cases."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import select_parser

SCHEMA_TOOLS = [{"type": "function", "function": {"name": "calc", "parameters": {"type": "object", "properties": {
    "n": {"type": "integer"}, "x": {"type": "number"}, "ok": {"type": "boolean"}, "o": {"type": "object"},
    "s": {"type": "string"}, "maybe": {"anyOf": [{"type": "object"}, {"type": "null"}]}}}}}]


def block(name: str, params: str) -> str:
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


class TestQwen3Coder(ParserConformance):
    parser_name = "qwen3_coder"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "function_tag_without_gt": "<tool_call>\n<function=get_weather\n</function>\n</tool_call>",
            "no_function": "<tool_call>\nget_weather city=Paris\n</tool_call>",
            "unclosed_wrapper": "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n",
        }

    def bad_then_good_sample(self) -> str:
        return ("<tool_call>\n<function=broken\n</function>\n</tool_call>\n"
                + block("search", "<parameter=query>\ngood\n</parameter>\n"))

    def test_schema_typing(self) -> None:
        params = ("<parameter=n>\n7\n</parameter>\n<parameter=x>\n2.5\n</parameter>\n<parameter=ok>\nTrue\n"
                  "</parameter>\n<parameter=o>\n{\"a\": [1]}\n</parameter>\n<parameter=s>\n007\n</parameter>\n"
                  "<parameter=maybe>{\"k\": 1}</parameter>\n")
        result = self.parse(block("calc", params), tools=SCHEMA_TOOLS)
        assert json.loads(result.tool_calls[0].arguments) == {
            "n": 7, "x": 2.5, "ok": True, "o": {"a": [1]}, "s": "007", "maybe": {"k": 1}}

    def test_without_schema_values_stay_strings(self) -> None:
        result = self.parse(block("calc", "<parameter=n>\n7\n</parameter>\n"), tools=None)
        assert json.loads(result.tool_calls[0].arguments) == {"n": "7"}

    def test_only_one_wrapping_newline_is_markup(self) -> None:
        result = self.parse(block("write_note", "<parameter=text>\n  indented\n\n</parameter>\n"))
        assert json.loads(result.tool_calls[0].arguments) == {"text": "  indented\n"}

    def test_missing_parameter_close_and_wrapper(self) -> None:
        text = "<function=get_weather>\n<parameter=city>\nDallas\n<parameter=unit>\nf\n</parameter>\n</function>"
        result = self.parse(text)
        assert json.loads(result.tool_calls[0].arguments) == {"city": "Dallas", "unit": "f"}
        assert result.errors == [] and result.content is None

    def test_selection(self) -> None:
        assert select_parser("Qwen/Qwen3-Coder-30B-A3B-Instruct") == "qwen3_coder"
        assert select_parser("Qwen/Qwen3.5-397B-A17B") == "qwen3_coder"

    def test_hermes_json_inside_the_wrapper(self) -> None:
        text = '<tool_call>\n{"name": "search", "arguments": {"query":"x"}}\n</tool_call>\n' + block(
            "get_time", "")
        result = self.parse(text)
        assert [(c.name, c.arguments) for c in result.tool_calls] == [("search", '{"query":"x"}'), ("get_time", "{}")]
        assert result.errors == []
