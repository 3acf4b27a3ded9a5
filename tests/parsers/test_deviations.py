"""Naming the foreign wrapper a reply wrote its tool calls in (`wtb_local/formats/parsers/deviations.py`,
docs/parser-policies.md §3): every registered format against every other parser, the shapes real models
write, what is not counted, and that it never raises and stays fast."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wtb_local.contract.schema import FormatDeviation, ParsedCall, ParseResult
from wtb_local.formats.parsers import get_parser, parse_completion, parser_names
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.deviations import _detect, format_deviation, shapes

TOOLS = [{"type": "function", "function": {"name": name, "description": name,
                                           "parameters": {"type": "object", "properties": {}}}}
         for name in ("get_weather", "search")]
CALLS = [ParsedCall(name="get_weather", arguments='{"city": "Paris"}'),
         ParsedCall(name="search", arguments='{"query": "museums"}')]
WEATHER = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
SEARCH = '{"name": "search", "arguments": {"query": "museums"}}'


def _deviation(text: str, parser: str = "hermes", tools: list[dict[str, Any]] | None = TOOLS) -> dict | None:
    found = parse_completion(get_parser(parser), text, tools=tools).format_deviation
    return found.model_dump() if found is not None else None


# Parsers with no format of their own: `response_template` writes what a checkpoint's metadata declares.
NO_OWN_FORMAT = {"response_template"}


def test_the_formats_are_learnt_from_the_parsers() -> None:
    """Markup, plain-JSON reading and sameness come from each parser's own rendering of a probe call."""
    by_name = {shape.name: shape for shape in shapes()}
    assert set(by_name) == set(parser_names()) - NO_OWN_FORMAT
    learnt = {name: (by_name[name].marker, by_name[name].plain)
              for name in ("hermes", "mistral", "gpt_oss", "pythonic", "llama3_json", "xlam", "hammer")}
    assert learnt == {"hermes": ("<tool_call>", False), "mistral": ("[TOOL_CALLS]", False),
                      "gpt_oss": ("commentary", False), "pythonic": ("[", False), "llama3_json": ("", True),
                      "xlam": ("", True), "hammer": ("```", True)}
    # the same text: what a `<think></think>` prefix or a specialisation adds is not the format
    assert by_name["granite4"].call_text == by_name["hermes"].call_text
    assert by_name["deepseek_r1"].call_text == by_name["deepseek_v3"].call_text
    assert by_name["qwen3_coder"].call_text != by_name["hermes"].call_text


@pytest.mark.parametrize("run", parser_names())
def test_every_registered_format_is_named_when_another_parser_runs(run: str) -> None:
    """Two calls written by each registered parser's `format`, read by `run`: none when `run` reads them;
    else `format:<a parser writing that very text>`, or fenced/bare JSON for the formats that are plain JSON
    (llama3_json, xlam, hammer), with both calls counted."""
    by_name = {shape.name: shape for shape in shapes()}
    reader = get_parser(run, thinking=False)  # the text after a closed reasoning block
    named = {}
    for writer in sorted(set(parser_names()) - NO_OWN_FORMAT):
        text = get_parser(writer).format(None, CALLS)
        result = parse_completion(reader, text, tools=TOOLS)
        found = result.format_deviation
        if len(result.tool_calls) == len(CALLS):
            assert found is None, (writer, text)
            continue
        assert result.tool_calls == [] and found is not None and found.calls == 2, (writer, text, result)
        if by_name[writer].plain:
            assert found.kind == ("fenced_json" if "```" in text else "bare_json"), (writer, found)
        else:
            same = {name for name, shape in by_name.items() if shape.call_text == by_name[writer].call_text}
            assert found.kind.removeprefix("format:") in same, (writer, found)
        named[writer] = found.kind
    assert named, "every parser reads some other parser's format as a deviation"


def test_the_named_formats_for_a_hermes_run() -> None:
    """The names themselves, for the format of the first real model (hermes): formats two parsers write
    alike are named by the one of lower priority (deepseek_v3 for deepseek_r1's)."""
    expected = {
        "deepseek_r1": "format:deepseek_v3", "deepseek_v3": "format:deepseek_v3",
        "deepseek_v31": "format:deepseek_v31", "glm45": "format:glm45", "gpt_oss": "format:gpt_oss",
        "granite": "format:granite", "granite4": None, "hammer": "fenced_json", "hermes": None,
        "hunyuan": "format:hunyuan", "kimi_k2": "format:kimi_k2", "llama3_json": "bare_json",
        "minimax_m2": "format:minimax_m2", "mistral": "format:mistral", "mistral_v11": "format:mistral_v11",
        "phi4_mini": "format:phi4_mini", "pythonic": "format:pythonic", "qwen3_coder": "format:qwen3_coder",
        "seed_oss": "format:seed_oss", "xlam": "bare_json"}
    # the parsers added later are covered by the test above
    named = {writer: _deviation(get_parser(writer).format(None, CALLS)) for writer in expected}
    assert {writer: found["kind"] if found else None for writer, found in named.items()} == expected


REAL_SHAPES = {
    # what Qwen2.5-Coder-0.5B-Instruct wrote for most of its calls (hermes format)
    "fenced json": (f"```json\n{WEATHER}\n```", {"kind": "fenced_json", "calls": 1}),
    "prose, then fenced json": (f"I'll check the weather for you.\n\n```json\n{WEATHER}\n```",
                                {"kind": "fenced_json", "calls": 1}),
    "a fence without a language": (f"```\n{WEATHER}\n```", {"kind": "fenced_json", "calls": 1}),
    "one fence per parallel call": (f"```json\n{WEATHER}\n```\n```json\n{SEARCH}\n```",
                                    {"kind": "fenced_json", "calls": 2}),
    "a fenced list": (f"```json\n[{WEATHER}, {SEARCH}]\n```", {"kind": "fenced_json", "calls": 2}),
    "two objects in one fence": (f"```json\n{WEATHER}\n{SEARCH}\n```", {"kind": "fenced_json", "calls": 2}),
    "bare json": (WEATHER, {"kind": "bare_json", "calls": 1}),
    "bare json in prose": (f"Calling {WEATHER} now.", {"kind": "bare_json", "calls": 1}),
    "llama-style parameters": ('{"type": "function", "name": "get_weather", "parameters": {"city": "Paris"}}',
                               {"kind": "bare_json", "calls": 1}),
    "openai tool-call entries": (json.dumps({"tool_calls": [{"type": "function", "function": {
        "name": "get_weather", "arguments": '{"city": "Paris"}'}}]}), {"kind": "bare_json", "calls": 1}),
    "mistral": (f"[TOOL_CALLS][{WEATHER}]", {"kind": "format:mistral", "calls": 1}),
    "mistral, spaced": (f"[TOOL_CALLS] [{WEATHER}, {SEARCH}]", {"kind": "format:mistral", "calls": 2}),
    "qwen3-coder xml inside the tags": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        {"kind": "format:qwen3_coder", "calls": 1}),
    "harmony": (('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}'
                 "<|call|>"), {"kind": "format:gpt_oss", "calls": 1}),
    "pythonic": ('[get_weather(city="Paris")]', {"kind": "format:pythonic", "calls": 1}),
    "a fenced call beside a tagged one": (f"<tool_call>\n{WEATHER}\n</tool_call>\nand\n```json\n{SEARCH}\n```",
                                          {"kind": "fenced_json", "calls": 1}),
}


@pytest.mark.parametrize("case", sorted(REAL_SHAPES))
def test_the_shapes_real_models_write(case: str) -> None:
    text, expected = REAL_SHAPES[case]
    assert _deviation(text) == expected


NOT_COUNTED = {
    "prose": "The weather in Paris is sunny, 21°C [source: the forecast].",
    "json data in an answer": '```json\n{"name": "Paris", "population": 2102650}\n```',
    "a list of records": '[{"name": "Louvre", "arguments": "long"}, {"name": "Orsay", "arguments": "short"}]',
    "a tool's schema echoed": json.dumps({"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}),
    "a call-shaped object naming no tool of the step": '{"name": "book_flight", "arguments": {"to": "Paris"}}',
    "a name without arguments": '{"name": "get_weather"}',
    "arguments that are no object": '{"name": "get_weather", "arguments": ["Paris"]}',
    "python code": "```python\nprint(get_weather('Paris'))\n```",
    "the run's own format": f"<tool_call>\n{WEATHER}\n</tool_call>",
    "the run's own format, broken": '<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>',
    "a call inside the closed reasoning block": f"<think>\n```json\n{WEATHER}\n```\n</think>\n\nIt is sunny.",
    "empty": "",
}


@pytest.mark.parametrize("case", sorted(NOT_COUNTED))
def test_what_is_not_counted(case: str) -> None:
    assert _deviation(NOT_COUNTED[case]) is None


def test_without_the_steps_tools_any_name_counts() -> None:
    """`parsers parse` rows without `tools`: the name cannot be checked."""
    text = NOT_COUNTED["a call-shaped object naming no tool of the step"]
    assert _deviation(text, tools=None) == {"kind": "bare_json", "calls": 1}


def test_a_format_that_reads_plain_json_names_no_json() -> None:
    """llama3_json reads JSON calls wherever they are: a fenced call is its own call, not a deviation;
    what it does not read is still named (here Mistral's tags around a list it does not take)."""
    assert _deviation(f"```json\n{WEATHER}\n```", parser="llama3_json") is None
    assert _deviation('[get_weather(city="Paris")]', parser="llama3_json") == {"kind": "format:pythonic", "calls": 1}


class _Broken(ToolParser):
    """A run parser whose `format` raises `error` and whose result is odd."""

    name = "broken_for_test"

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def parse(self, text: str, *, tools: list[dict[str, Any]] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        return ParseResult(content=text)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        raise self.error


def test_a_run_parser_that_writes_no_format_still_gets_its_deviations_named() -> None:
    """NotImplementedError: the parser declares it writes nothing (a vLLM parser without a mirror)."""
    parser = _Broken(NotImplementedError("no format"))
    result = parser.parse(f"```json\n{WEATHER}\n```")
    assert format_deviation(parser, f"```json\n{WEATHER}\n```", result, TOOLS) == FormatDeviation(
        kind="fenced_json", calls=1)


def test_the_run_parsers_own_crash_is_raised_not_swallowed() -> None:
    """Any other exception of the run's own parser is a bug of ours: raised to the step driver (an internal
    error of kind parser, docs/reliability.md), at every call, never a detection silently without its format."""
    parser = _Broken(RuntimeError("boom"))
    result = parser.parse(f"```json\n{WEATHER}\n```")
    for _ in range(2):
        with pytest.raises(RuntimeError, match="^boom$"):
            format_deviation(parser, f"```json\n{WEATHER}\n```", result, TOOLS)


PIECES = [*'{}[]":,`\n <>|/=abcnme_', "```json\n", '"name"', '"arguments"', '"parameters"', "<tool_call>",
          "</tool_call>", "[TOOL_CALLS]", "get_weather", "[get_weather(", "<think>", "</think>"]


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(PIECES), max_size=60).map("".join),
       tools=st.one_of(st.none(), st.just(TOOLS), st.lists(st.one_of(st.integers(), st.text(), st.just({})))))
def test_it_never_raises(text: str, tools: Any) -> None:
    """The detection itself, below the guard that turns any exception into no deviation."""
    parser = get_parser("hermes")
    result = parser.parse(text, tools=None)
    found = _detect(parser, text, result, tools)
    assert found is None or (found.calls >= 1 and found.kind)


def test_it_is_fast_on_the_common_reply() -> None:
    """It runs on every step: a two-kilobyte text answer with brackets costs well under a millisecond."""
    parser = get_parser("hermes")
    text = "The forecast [from the weather service] says {sunny} with 21°C in Paris. " * 28
    result = parser.parse(text, tools=TOOLS)
    format_deviation(parser, text, result, TOOLS)
    started = time.perf_counter()
    for _ in range(1000):
        assert format_deviation(parser, text, result, TOOLS) is None
    assert (time.perf_counter() - started) / 1000 < 0.001
