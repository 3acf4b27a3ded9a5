"""The paper harness's per-family parse rules (paper-harness.md §2.1-§2.7, §1.2 decoding)."""

from __future__ import annotations

import pytest

from wtb_local.benchmark.protocols.parse_rules import (
    EMPTY_LIST_TEXT,
    HAMMER_PLACEHOLDER,
    PaperParser,
    parse_hammer,
    parse_llama,
    parse_pythonic,
    parse_qwen,
    parse_xlam2,
)
from wtb_local.contract.schema import ParsedCall
from wtb_local.formats.parsers import get_parser


def _calls(result) -> list[tuple[str, str]]:
    return [(c.name, c.arguments) for c in result.tool_calls]


# --- §2.1 Qwen ------------------------------------------------------------------------------------------

def test_qwen_one_line_json_blocks_and_think_text_kept_as_content() -> None:
    text = ('<think>\nthe user wants Paris\n</think>\n\n<tool_call>\n{"name": "getWeather", "arguments": '
            '{"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "getWeather", "arguments": "{\\"city\\": \\"Rome\\"}"}\n</tool_call>')
    result = parse_qwen(text)
    assert _calls(result) == [("getWeather", '{"city": "Paris"}'), ("getWeather", '{"city": "Rome"}')]
    assert result.content == "<think>\nthe user wants Paris\n</think>\n\n"  # §2: no handle strips <think>
    assert result.errors == []


def test_qwen_drops_blocks_that_fail_json_and_multiline_blocks_are_text() -> None:
    text = '<tool_call>\n{"name": "a", "arguments": {}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>'
    assert _calls(parse_qwen(text)) == [("b", "{}")]
    pretty = '<tool_call>\n{"name": "a",\n "arguments": {}}\n</tool_call><|im_end|>'
    result = parse_qwen(pretty)
    assert (result.tool_calls, result.content) == ([], '<tool_call>\n{"name": "a",\n "arguments": {}}\n</tool_call>')


def test_qwen_block_without_arguments_is_an_error() -> None:
    result = parse_qwen('<tool_call>\n{"name": "a"}\n</tool_call>')
    assert result.tool_calls == [] and result.errors


def test_thinking_cut_inside_think_is_a_text_reply() -> None:
    """§2: a thinking model cut off inside <think> produces text that is accepted as ask/answer."""
    result = parse_qwen("<think>\nlet me think about the cities")
    assert (result.content, result.tool_calls, result.errors) == ("<think>\nlet me think about the cities", [], [])


# --- §2.2 Llama -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "calls", "content"), [
    # the typical Llama 3.1 output has no word "function": text (Table 8's Refusal rows)
    ('{"name": "getWeather", "parameters": {"city": "Paris"}}', [],
     '{"name": "getWeather", "parameters": {"city": "Paris"}}'),
    ('{"type": "function", "name": "getWeather", "parameters": {"city": "Paris"}}',
     [("getWeather", '{"city": "Paris"}')], None),
    ('{"type": "function", "name": "getWeather", "parameters": ', [],
     '{"type": "function", "name": "getWeather", "parameters": '),  # invalid JSON stays text
])
def test_llama_keyword_rule(text: str, calls: list, content: str | None) -> None:
    result = parse_llama(text)
    assert _calls(result) == calls
    if content is not None:
        assert result.content == content


def test_llama_list_is_an_error() -> None:
    result = parse_llama('[{"type": "function", "name": "a", "parameters": {}}]')
    assert result.tool_calls == [] and result.errors


# --- §2.3 Hammer ------------------------------------------------------------------------------------------

def test_hammer_needs_the_exact_fence_and_otherwise_gives_the_placeholder() -> None:
    good = '```\n[{"name": "getWeather", "arguments": {"city": "Paris"}}]\n```'
    result = parse_hammer(good)
    assert _calls(result) == [("getWeather", '{"city": "Paris"}')]
    for other in ('[{"name": "getWeather", "arguments": {}}]', "```\n[]\n```", "Sure, which city?", ""):
        assert parse_hammer(other).content == HAMMER_PLACEHOLDER
    broken = '```\n[{"name": "getWeather", "arguments": {"city": "Paris"}}]\n``'  # cut: JSON fails -> raw text
    assert parse_hammer(broken).content == broken


# --- §2.4 / §2.5 ToolACE, watt (pythonic) -------------------------------------------------------------------

def test_pythonic_bracket_rule_keywords_only_and_bare_names() -> None:
    result = parse_pythonic('[weather.getWeather(city="Paris", days=2, metric=true), other(1, x=Rome)]')
    assert _calls(result) == [("getWeather", '{"city": "Paris", "days": 2, "metric": true}'), ("other", '{"x": "Rome"}')]
    assert result.content == "use getWeather, other to solve user problem"


@pytest.mark.parametrize(("text", "content", "error"), [
    ("[]", EMPTY_LIST_TEXT, False),  # no calls: accepted as a text reply
    (" [getWeather(city='Paris')]", " [getWeather(city='Paris')]", False),  # no stripping: text
    ("Which city?", "Which city?", False),
    ("[getWeather(city='Paris'", None, False),  # does not end with ]: text
    ("[getWeather(city='Paris']", None, True),  # bracketed but not Python: error
])
def test_pythonic_text_and_errors(text: str, content: str | None, error: bool) -> None:
    result = parse_pythonic(text)
    assert result.tool_calls == []
    assert bool(result.errors) is error
    if not error:
        assert result.content == (content if content is not None else text)


# --- §2.7 xLAM-2 --------------------------------------------------------------------------------------------

def test_xlam2_json_list_rule() -> None:
    assert _calls(parse_xlam2('[{"name": "getWeather", "arguments": {"city": "Paris"}}]')) == [
        ("getWeather", '{"city": "Paris"}')]
    assert parse_xlam2("[]").content == EMPTY_LIST_TEXT
    assert parse_xlam2('[{"arguments": {}}]').errors
    assert parse_xlam2("[not json]").content == "[not json]"
    assert parse_xlam2('\n[{"name": "a", "arguments": {}}]').tool_calls == []  # no stripping


# --- decoding and the generic (inferred) rule ------------------------------------------------------------------

def test_special_tokens_are_removed_before_the_rule() -> None:
    """§1.2: decoding skips special tokens; Qwen's <tool_call> is not special and survives."""
    parser = PaperParser("qwen", special_tokens=["<|im_end|>", "<|endoftext|>"])
    result = parser.parse('<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call><|im_end|><|endoftext|>')
    assert _calls(result) == [("a", "{}")]


def test_generic_rule_keeps_think_and_reads_broken_calls_as_text() -> None:
    parser = PaperParser("native", native=get_parser("hermes", thinking=True))
    broken = 'I will call it.\n<tool_call>\n{"name": "a", "arguments": {\n</tool_call>'
    assert (parser.parse(broken).content, parser.parse(broken).errors) == (broken, [])
    ok = parser.parse('reasoning here</think>\n\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>')
    assert _calls(ok) == [("a", "{}")]
    assert ok.content.startswith("<think>reasoning here</think>")


INSIDE = '<tool_call>\n{"name": "search", "arguments": {"query": "inside"}}\n</tool_call>'
OUTSIDE = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


@pytest.mark.parametrize("rule", ["qwen", "native"])
def test_a_call_inside_the_think_block_is_read_and_counted(rule: str) -> None:
    """docs/parser-policies.md §1, paper protocol: the harness strips no think block, so its rules read a
    call written inside it like any other (the release protocol drops it); think text stays content."""
    parser = PaperParser(rule, native=get_parser("hermes") if rule == "native" else None)
    text = f"<think>\nLet me see. {INSIDE} No, not yet.\n</think>\n\nDone.\n{OUTSIDE}"
    result = parser.parse(text)
    assert _calls(result) == [("search", '{"query": "inside"}'), ("get_weather", '{"city": "Paris"}')]
    assert result.calls_in_reasoning == 1 and result.errors == [] and result.reasoning is None
    assert result.content.startswith("<think>") and "Let me see." in result.content
    alone = parser.parse(f"<think>\nLet me see. {INSIDE} No, not yet.\n</think>\n\nDone.")
    assert _calls(alone) == [("search", '{"query": "inside"}')] and alone.calls_in_reasoning == 1
    assert parser.parse(f"<think>\nhmm\n</think>\n\n{OUTSIDE}").calls_in_reasoning == 0


@pytest.mark.parametrize("rule", ["qwen", "hammer", "pythonic", "xlam2"])
def test_format_reads_back_through_its_rule(rule: str) -> None:
    parser = PaperParser(rule)
    calls = [ParsedCall(name="getWeather", arguments='{"city": "Paris"}'),
             ParsedCall(name="getWeather", arguments='{"city": "Rome"}')]
    assert _calls(parser.parse(parser.format(None, calls))) == [
        ("getWeather", '{"city": "Paris"}'), ("getWeather", '{"city": "Rome"}')]


def test_llama_format_is_what_llama_writes_and_reads_as_text() -> None:
    parser = PaperParser("llama")
    text = parser.format(None, [ParsedCall(name="getWeather", arguments='{"city": "Paris"}')])
    assert text == '{"name": "getWeather", "parameters": {"city": "Paris"}}'
    assert parser.parse(text).tool_calls == []


# --- §2.11 functionary, §2.10 Gorilla -------------------------------------------------------------------------

def test_fcm_function_tags() -> None:
    from wtb_local.benchmark.protocols.parse_rules import parse_fcm

    text = '<function=a>{"x": 1}</function><function=b>{"y": "z"}</function>'
    assert _calls(parse_fcm(text)) == [("a", '{"x": 1}'), ("b", '{"y": "z"}')]
    assert parse_fcm(text).content == text  # the text is always the raw output
    assert _calls(parse_fcm('Sure <function=a>{"x": 1}</function><function=b>{"y": "z"}</function>')) == [
        ("b", '{"y": "z"}')]  # a piece with leading text is skipped
    assert _calls(parse_fcm('<function=a>{"x": 1}</function><function=b>{bad</function>')) == [("a", '{"x": 1}')]
    assert parse_fcm('<function=a>{"x": 1}').tool_calls == []  # counts differ: text


def test_gorilla_function_markers() -> None:
    from wtb_local.benchmark.protocols.parse_rules import parse_gorilla

    result = parse_gorilla(' <<function>>getWeather(city="Paris", days=2)<<function>>other(1, 2)<<function>>broken(')
    assert _calls(result) == [("getWeather", '{"city": "Paris", "days": 2}'), ("other", '{"None": [1, 2]}')]
    plain = parse_gorilla("  I cannot help.  ")
    assert (plain.tool_calls, plain.content) == ([], "I cannot help.")


@pytest.mark.parametrize("rule", ["fcm", "gorilla"])
def test_fcm_and_gorilla_format_read_back(rule: str) -> None:
    parser = PaperParser(rule)
    calls = [ParsedCall(name="getWeather", arguments='{"city": "Paris"}')]
    assert _calls(parser.parse(parser.format(None, calls))) == [("getWeather", '{"city": "Paris"}')]
