"""Meta Muse (Spark, Glimmer) parsers: conformance plus channels, value typing and names."""

from __future__ import annotations

import json
from typing import ClassVar

from tests.parsers.conformance import TOOLS, ParserConformance
from wtb_local.formats.parsers import get_parser, parser_class, select_parser


def invoke(name: str, params: str, to: str | None = None) -> str:
    return (f"<|start|>assistant to={to or name}<|message|><atem:function_calls>\n<atem:invoke name=\"{name}\">\n"
            f"{params}</atem:invoke>\n</atem:function_calls><|eom|>")


def param(key: str, value: str) -> str:
    return f'<atem:parameter name="{key}">{value}</atem:parameter>\n'


class MuseCases(ParserConformance):
    supports_reasoning = True
    reasoning_open_tag = " to=self<|message|>"
    reasoning_close_tag = "<|eom|>"
    xfail_cases: ClassVar[dict[str, str]] = {"test_reasoning_prefilled_open_tag": (
        "Muse has no reasoning opener to pre-fill: the prompt ends with `<|start|>assistant` and the reply "
        "names its channel itself")}

    def malformed_samples(self) -> dict[str, str]:
        return {
            "no_invoke": "<|start|>assistant to=search<|message|>search(query=x)<|eot|>",
            "unclosed_invoke": ('<|start|>assistant to=search<|message|><atem:function_calls>\n'
                                '<atem:invoke name="search">\n' + param("query", "x") + "<|eot|>"),
            "nameless_invoke": invoke("", param("query", "x"), to="search"),
        }

    def bad_then_good_sample(self) -> str:
        return invoke("", param("query", "x"), to="search") + invoke("search", param("query", "good"))

    def call_inside_reasoning(self, outer: list) -> str:
        inner = ('<atem:function_calls>\n<atem:invoke name="search">\n' + param("query", "inside")
                 + "</atem:invoke>\n</atem:function_calls>")
        return self.parser.format("Done.", outer, f"Let me see. {inner} No, not yet.")


class TestMuse(MuseCases):
    parser_name = "muse"
    no_real_outputs = ("the collected Muse outputs are Muse-Glimmer-30B's (SGLang's `muse` is its Glimmer "
                       "detector); Spark writes the same channels, read by the tests below")


class TestMuseGlimmer(MuseCases):
    parser_name = "muse_glimmer"


def calls(result) -> list[tuple[str, dict]]:
    return [(c.name, json.loads(c.arguments)) for c in result.tool_calls]


def test_spark_keeps_schema_strings_glimmer_decodes_every_value() -> None:
    text = invoke("all_types", param("digits", "12") + param("s", "true") + param("i", "42") + param("n", "null"))
    spark = get_parser("muse").parse(text, tools=TOOLS)
    glimmer = get_parser("muse_glimmer").parse(text, tools=TOOLS)
    assert calls(spark) == [("all_types", {"digits": "12", "s": "true", "i": 42, "n": None})]
    assert calls(glimmer) == [("all_types", {"digits": 12, "s": True, "i": 42, "n": None})]


def test_channels_developer_dropped_commentary_content_bare_header_by_variant() -> None:
    text = ("<|message|>chain<|eom|><|start|>assistant to=developer<|message|>internal<|eom|>"
            "<|start|>assistant to=commentary<|message|>Working on it.<|eom|>"
            "<|start|>assistant to=user<|message|>Done.<|eot|>")
    spark = get_parser("muse").parse(text)
    glimmer = get_parser("muse_glimmer").parse(text)
    assert (spark.reasoning, spark.content, spark.errors) == ("chain", "Working on it.Done.", [])
    assert (glimmer.reasoning, glimmer.content, glimmer.errors) == (None, "chainWorking on it.Done.", [])


def test_doubled_bare_name_collapses_only_to_a_declared_tool() -> None:
    text = invoke("search.search", param("query", "x")) + invoke("weather.get", param("city", "Rome"))
    result = get_parser("muse").parse(text, tools=TOOLS)
    assert [c.name for c in result.tool_calls] == ["search", "weather.get"]
    assert [c.name for c in get_parser("muse").parse(text, tools=None).tool_calls] == ["search.search", "weather.get"]


def test_a_message_without_its_end_ends_at_the_next_header() -> None:
    """A reasoning message whose <|eom|> never came does not swallow the call after it."""
    text = " to=self<|message|>thinking" + invoke("search", param("query", "x"))
    result = get_parser("muse").parse(text, tools=TOOLS)
    assert (result.reasoning, calls(result), result.errors) == ("thinking", [("search", {"query": "x"})], [])


def test_a_call_cut_at_the_token_limit_is_an_error() -> None:
    text = (" to=self<|message|>r<|eom|><|start|>assistant to=search<|message|><atem:function_calls>\n"
            '<atem:invoke name="search">\n<atem:parameter name="query">Pa')
    result = get_parser("muse").parse(text, tools=TOOLS, finish_reason="length")
    assert (result.reasoning, result.tool_calls, result.content, result.errors) == ("r", [], None,
                                                                                   ["truncated tool call"])


def test_names_and_selection() -> None:
    assert parser_class("musespark") is parser_class("musespark1x") is parser_class("muse")
    assert [select_parser(m) for m in ("meta-models/Muse-Glimmer-30B", "meta-models/Muse-Spark-1.1",
                                       "meta-models/muse_spark")] == ["muse_glimmer", "muse", "muse"]
