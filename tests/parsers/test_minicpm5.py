"""MiniCPM5 parser: conformance suite, CDATA values, schema typing of Python-`str` values."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser, select_parser

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
    "flag": {"type": "boolean"}, "cfg": {"type": "object"}, "n": {"type": "integer"}, "s": {"type": "string"}}}}}]


class TestMiniCpm5(ParserConformance):
    parser_name = "minicpm5"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "stray_text": '<function name="get_weather">city=Paris</function>',
            "unclosed_param": '<function name="get_weather"><param name="city">Paris</function>',
            "unclosed_cdata": '<function name="get_weather"><param name="city"><![CDATA[Paris</param></function>',
        }

    def bad_then_good_sample(self) -> str:
        return ('<function name="get_weather">city=Paris</function>\n'
                '<function name="search"><param name="query">good</param></function>')

    def test_selection(self) -> None:
        assert select_parser("openbmb/MiniCPM5-1B") == "minicpm5"

    def test_cdata_keeps_markup(self) -> None:
        text = '<function name="f"><param name="s"><![CDATA[<a href="/x">hi</a> </param>]]></param></function>'
        result = get_parser("minicpm5").parse(text, tools=TOOLS)
        assert json.loads(result.tool_calls[0].arguments) == {"s": '<a href="/x">hi</a> </param>'}

    def test_python_str_values_typed_by_the_schema(self) -> None:
        # the template writes non-strings with `str`: True, {'k': 1}
        text = ('<function name="f"><param name="flag">True</param><param name="cfg">{\'k\': [1, None]}</param>'
                '<param name="n">7</param><param name="s">007</param></function>')
        result = get_parser("minicpm5").parse(text, tools=TOOLS)
        assert json.loads(result.tool_calls[0].arguments) == {"flag": True, "cfg": {"k": [1, None]}, "n": 7, "s": "007"}
