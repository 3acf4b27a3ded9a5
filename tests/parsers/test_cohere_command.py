"""Cohere Command parser: conformance plus ids, text wrappers and vLLM's names."""

from __future__ import annotations

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser


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


def test_ids_text_wrappers_and_reasoning() -> None:
    text = ('Plan it.<|END_THINKING|><|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "search", '
            '"parameters": {"query": "x"}},\n    {"tool_call_id": "1", "tool_name": "get_time", "parameters": {}}\n'
            ']<|END_ACTION|><|END_OF_TURN_TOKEN|>')
    result = get_parser("cohere_command", thinking=True).parse(text)
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("0", "search", '{"query": "x"}'),
                                                                        ("1", "get_time", "{}")]
    assert (result.reasoning, result.content, result.errors) == ("Plan it.", None, [])
    answer = get_parser("cohere_command").parse("<|START_RESPONSE|>Paris is sunny.<|END_RESPONSE|>")
    assert answer.content == "Paris is sunny."


def test_vllm_names_select_it() -> None:
    from wtb_local.formats.parsers import parser_class, select_parser

    assert parser_class("cohere_command3") is parser_class("cohere_command4") is parser_class("cohere_command")
    assert get_parser("cohere_command4").name == "cohere_command"
    assert [select_parser(m) for m in ("CohereLabs/c4ai-command-a-03-2025", "CohereLabs/command-a-reasoning-08-2025",
                                       "CohereLabs/c4ai-command-r7b-12-2024", "CohereLabs/North-Mini-Code-1.0",
                                       "CohereLabs/command-a-plus-05-2026")] == ["cohere_command"] * 5


def test_citations_are_markup_the_cited_text_stays() -> None:
    """Command A / Command 4 cite with `<co>text</co: doc:[spans]>`: the markup goes, in reasoning and content."""
    text = ("<|START_THINKING|>Per <co>the forecast</co: 0:[1]>, sun.<|END_THINKING|>"
            "<|START_TEXT|>It is <co>sunny</co: 0:[1,2],1:[3]> today.<|END_TEXT|>")
    result = get_parser("cohere_command").parse(text)
    assert (result.reasoning, result.content, result.errors) == ("Per the forecast, sun.", "It is sunny today.", [])
