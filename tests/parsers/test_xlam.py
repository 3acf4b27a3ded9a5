"""xLAM-2 and Hammer2.1 JSON-list parsers: conformance plus family cases."""

from __future__ import annotations

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser


class XlamFamily(ParserConformance):
    def malformed_samples(self) -> dict[str, str]:
        return {
            "missing_bracket": '[{"name": "search", "arguments": {"query": "x"}}',
            "unquoted": '[{"name": "search", "arguments": {query: "x"}}]',
            "fenced_broken": '```json\n[{"name": "search", "arguments": {"query": "x"]\n```',
        }

    def bad_then_good_sample(self) -> str:
        return (
            '[{"name": "get_weather", "arguments": {"city": Paris}}]\n'
            '[{"name": "search", "arguments": {"query": "good"}}]'
        )


class TestXlam(XlamFamily):
    parser_name = "xlam"


class TestHammer(XlamFamily):
    parser_name = "hammer"
    no_real_outputs = "no Hammer generation was at hand (xlam's real outputs are the family's)"


def test_hammer_writes_a_fence() -> None:
    text = get_parser("hammer").format(
        None, get_parser("xlam").parse('[{"name": "f", "arguments": {}}]').tool_calls
    )
    assert text == '```\n[{"name": "f", "arguments": {}}]\n```'


def test_wrappers_removed_from_content() -> None:
    for raw in (
        'Sure.\n```json\n[{"name": "f", "arguments": {"a": 1}}]\n```',
        'Sure.[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}}]',
        'Sure.<tool_call>[{"name": "f", "arguments": {"a": 1}}]</tool_call>',
    ):
        result = get_parser("xlam").parse(raw)
        assert result.content == "Sure." and [(c.name, c.arguments) for c in result.tool_calls] == [
            ("f", '{"a": 1}')
        ]


def test_single_object_and_empty_list() -> None:
    assert get_parser("xlam").parse('{"name": "f", "arguments": {}}').tool_calls[0].name == "f"
    empty = get_parser("hammer").parse("```\n[]\n```")
    assert empty.tool_calls == [] and empty.errors == [] and empty.content == "```\n[]\n```"


def test_list_items_without_arguments() -> None:
    result = get_parser("xlam").parse('[{"name": "get_time"}]')
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("get_time", "{}")]
    prose = get_parser("xlam").parse('My {"name": "Bob"} record.')
    assert prose.tool_calls == [] and prose.content == 'My {"name": "Bob"} record.'
