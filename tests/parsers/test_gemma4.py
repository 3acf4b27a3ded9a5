"""Gemma 4 parser: conformance suite, the channel reasoning blocks, and what wtb_local does with the inputs
of the known Gemma 4 parser bugs (docs/parser-policies.md, "2026 families")."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser, parse_completion, select_parser

DQ = '<|"|>'


def parse(text: str, **kw):
    return get_parser("gemma4", **kw).parse(text, finish_reason="stop")


def calls(result) -> list[tuple[str, dict]]:
    return [(c.name, json.loads(c.arguments)) for c in result.tool_calls]


class TestGemma4(ParserConformance):
    parser_name = "gemma4"
    supports_reasoning = True
    reasoning_open_tag = "<|channel>thought\n"
    reasoning_close_tag = "<channel|>"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "unclosed_object": "<|tool_call>call:get_weather{city:" + DQ + "Paris" + DQ + "<tool_call|>",
            "no_name": "<|tool_call>call:{city:" + DQ + "Paris" + DQ + "}<tool_call|>",
            "no_braces": "<|tool_call>call:get_weather city=Paris<tool_call|>",
            "unclosed_string": "<|tool_call>call:get_weather{city:" + DQ + "Paris}<tool_call|>",
        }

    def bad_then_good_sample(self) -> str:
        return ("<|tool_call>call:get_weather{city:" + DQ + "Paris<tool_call|>"
                "<|tool_call>call:search{query:" + DQ + "good" + DQ + "}<tool_call|>")

    def test_selection(self) -> None:
        assert select_parser("google/gemma-4-31B-it") == "gemma4"
        assert select_parser("google/gemma-4-E4B-it") == "gemma4"
        assert select_parser("google/gemma-4-26B-A4B-it") == "gemma4"
        assert select_parser("google/gemma-3-27b-it") == "pythonic"  # the earlier generation is not touched
        assert select_parser("someone/custom", config={"model_type": "gemma4"}) == "gemma4"

    def test_every_channel_block_is_reasoning(self) -> None:
        result = parse("<|channel>thought\nfirst<channel|>Answer.<|channel>thought\nsecond<channel|> More.")
        assert (result.reasoning, result.content, result.errors) == ("first\nsecond", "Answer. More.", [])

    def test_empty_thought_channel_is_no_reasoning(self) -> None:
        result = parse("<|channel>thought\n<channel|>Hi.")
        assert (result.reasoning, result.content) == (None, "Hi.")

    def test_python_spellings_and_delimited_keys(self) -> None:
        result = parse("<|tool_call>call:f{a:None,b:True," + DQ + "odd key" + DQ + ":1}<tool_call|>")
        assert calls(result) == [("f", {"a": None, "b": True, "odd key": 1})] and result.errors == []

    def test_bare_word_value_is_a_string(self) -> None:
        result = parse("<|tool_call>call:get_weather{city:Paris,unit:c}<tool_call|>")
        assert calls(result) == [("get_weather", {"city": "Paris", "unit": "c"})] and result.errors == []

    def test_call_word_in_prose_is_text(self) -> None:
        result = parse("Please call:me maybe")
        assert (result.content, result.tool_calls, result.errors) == ("Please call:me maybe", [], [])

    # --- the inputs of the known Gemma 4 parser bugs (vLLM and ollama issues) ------------------------------

    def test_string_delimiters_never_leak_into_arguments(self) -> None:
        # nested strings, delimited keys and delimited list items come out as plain strings
        text = ("<|tool_call>call:set{tags:[" + DQ + "a,b" + DQ + "," + DQ + 'say "hi"' + DQ + "],"
                "cfg:{" + DQ + "3" + DQ + ":" + DQ + "x}y" + DQ + ",name:" + DQ + "" + DQ + "}}<tool_call|>")
        result = parse(text)
        assert calls(result) == [("set", {"tags": ["a,b", 'say "hi"'], "cfg": {"3": "x}y", "name": ""}})]
        assert DQ not in result.tool_calls[0].arguments and result.errors == []

    def test_zero_argument_calls(self) -> None:
        result = parse("<|tool_call>call:get_status{}<tool_call|><|tool_call>call:get_time{}<tool_call|>")
        assert calls(result) == [("get_status", {}), ("get_time", {})] and result.errors == []

    def test_parenthesised_call_does_not_swallow_the_turn(self) -> None:
        # vllm#53642: `call:name(...)` swallowed the rest of the turn
        result = parse("<|tool_call>call:get_weather(city:" + DQ + "Paris" + DQ + ")<tool_call|>Then I report.")
        assert calls(result) == [("get_weather", {"city": "Paris"})]
        assert result.content == "Then I report."
        assert result.errors == ["call get_weather: arguments in parentheses instead of braces"]

    def test_colon_opener_is_read(self) -> None:
        # vllm#53431: the bare `<|tool_call>:name{` opener was dropped silently
        for text in ("<|tool_call>:get_time{city:" + DQ + "Oslo" + DQ + "}<tool_call|>",
                     "<|tool_call>:call:get_time{city:" + DQ + "Oslo" + DQ + "}<tool_call|>"):
            result = parse(text)
            assert calls(result) == [("get_time", {"city": "Oslo"})] and result.errors == [], text

    def test_trailing_dot_float(self) -> None:
        # vllm#42047: a trailing-dot float corrupted the streamed arguments
        assert calls(parse("<|tool_call>call:amount{orig:3.}<tool_call|>")) == [("amount", {"orig": 3.0})]

    def test_key_equals_value_is_read_and_reported(self) -> None:
        # ollama#17882: `key=value` pairs
        result = parse("<|tool_call>call:get_weather{city=" + DQ + "Paris" + DQ + "}<tool_call|>")
        assert calls(result) == [("get_weather", {"city": "Paris"})]
        assert result.errors == ["call get_weather: key=value pairs instead of key:value"]

    def test_turn_end_instead_of_call_end(self) -> None:
        result = parse("<|tool_call>call:gdb{args:" + DQ + "-batch" + DQ + "}<turn|>")
        assert calls(result) == [("gdb", {"args": "-batch"})]
        assert result.errors == ["call gdb: no <tool_call|> after the call (an unterminated block); call kept"]

    def test_fragmented_call_opener(self) -> None:
        result = parse("<call>get_time{city:" + DQ + "Rome" + DQ + "}<tool_call|>")
        assert calls(result) == [("get_time", {"city": "Rome"})] and result.errors == []

    def test_call_inside_the_thought_channel_is_counted_not_executed(self) -> None:
        text = ("<|channel>thought\nMaybe <|tool_call>call:search{query:" + DQ + "x" + DQ + "}<tool_call|>"
                "<channel|>Done.")
        result = parse_completion(get_parser("gemma4"), text, finish_reason="stop")
        assert (result.tool_calls, result.content, result.calls_in_reasoning) == ([], "Done.", 1)
