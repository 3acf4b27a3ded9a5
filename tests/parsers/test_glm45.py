"""GLM-4.5 parser: conformance plus family cases."""

from __future__ import annotations

import json

from tests.parsers.conformance import TOOLS, ParserConformance
from wtb_local.formats.parsers import get_parser


class TestGlm45(ParserConformance):
    parser_name = "glm45"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {
            "no_name": "<tool_call>\n<arg_key>query</arg_key>\n<arg_value>x</arg_value>\n</tool_call>",
            "unbalanced": "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>x\n</tool_call>",
        }

    def bad_then_good_sample(self) -> str:
        return (
            "<tool_call>\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>\n"
            "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>good</arg_value>\n</tool_call>"
        )


def args(raw: str, tools=TOOLS) -> dict:
    return json.loads(get_parser("glm45").parse(raw, tools=tools).tool_calls[0].arguments)


def test_schema_typing() -> None:
    raw = (
        "<tool_call>all_types\n<arg_key>i</arg_key>\n<arg_value>7</arg_value>\n<arg_key>s</arg_key>\n"
        "<arg_value>007</arg_value>\n<arg_key>b</arg_key>\n<arg_value>True</arg_value>\n<arg_key>n</arg_key>\n"
        '<arg_value>null</arg_value>\n<arg_key>o</arg_key>\n<arg_value>{"a": [1]}</arg_value>\n'
        "<arg_key>f</arg_key>\n<arg_value>2</arg_value>\n</tool_call>"
    )
    assert args(raw) == {"i": 7, "s": "007", "b": True, "n": None, "o": {"a": [1]}, "f": 2}


def test_strings_stay_strings_and_keep_whitespace() -> None:
    raw = "<tool_call>write_note\n<arg_key>text</arg_key>\n<arg_value>  two\nlines </arg_value>\n</tool_call>"
    assert args(raw) == {"text": "  two\nlines "}


def test_without_schema_values_stay_strings() -> None:
    raw = "<tool_call>mystery\n<arg_key>n</arg_key>\n<arg_value>5</arg_value>\n</tool_call>"
    assert args(raw, tools=None) == {"n": "5"}


def test_failed_coercion_keeps_raw_text() -> None:
    raw = "<tool_call>search\n<arg_key>limit</arg_key>\n<arg_value>many</arg_value>\n</tool_call>"
    assert args(raw) == {"limit": "many"}


def test_inline_zero_argument_call() -> None:
    result = get_parser("glm45").parse("<tool_call>get_time</tool_call>")
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("get_time", "{}")]
