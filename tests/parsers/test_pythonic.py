"""Pythonic call-list parser: conformance plus family cases."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser


class TestPythonic(ParserConformance):
    parser_name = "pythonic"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "positional_args": "[search('x')]",
            "syntax_error": "[search(query='x',, limit=2)]",
            "unclosed": "[search(query='x'",
            "non_literal": "[search(query=os.getcwd())]",
        }

    def bad_then_good_sample(self) -> str:
        return "[get_weather(city=Paris')] [search(query='good')]"


def parse(text: str, finish_reason: str | None = None):
    return get_parser("pythonic").parse(text, finish_reason=finish_reason)


def test_llama4_wrappers() -> None:
    result = parse("<|python_start|>[search(query='x')]<|python_end|><|eot|>")
    assert [c.name for c in result.tool_calls] == ["search"] and result.content is None


def test_python_literals_map_to_json() -> None:
    result = parse("[f(a=None, b=True, c=(1, 2), d={'k': 'v'}, e=1.5, g=-3, h=true, i=null, j=Paris)]")
    assert json.loads(result.tool_calls[0].arguments) == {
        "a": None,
        "b": True,
        "c": [1, 2],
        "d": {"k": "v"},
        "e": 1.5,
        "g": -3,
        "h": True,
        "i": None,
        "j": "Paris",
    }
    assert result.tool_calls[0].arguments.startswith('{"a": null')  # dumps_arguments, docs/evaluation.md §5


def test_dotted_names_and_brackets_in_strings() -> None:
    result = parse("[spotify.play(artist='A [b]', note=\"it's (x)\")]")
    assert result.tool_calls[0].name == "spotify.play"
    assert json.loads(result.tool_calls[0].arguments) == {"artist": "A [b]", "note": "it's (x)"}


def test_prose_brackets_are_content() -> None:
    result = parse("Options are [a, b] and [1, 2].")
    assert (
        result.tool_calls == [] and result.errors == [] and result.content == "Options are [a, b] and [1, 2]."
    )


def test_empty_list_is_text() -> None:
    result = parse("[]")
    assert result.tool_calls == [] and result.errors == [] and result.content == "[]"


def test_no_code_is_executed() -> None:
    result = parse("[f(x=__import__('os').system('echo pwned'))]")
    assert result.errors and all(c.name == "f" for c in result.tool_calls)
