"""Conformance of group B's second-half 2026 parsers and of the older formats every engine name needs (Jamba,
granite-20b-fc, Step3, InternLM), plus what only each family does. Their real outputs are read by
`test_reads_real_outputs` (tests/fixtures/parsers/2026h2/fam_b_samples.jsonl) and judged exactly in
tests/parsers/test_samples_2026h2.py.
"""

from __future__ import annotations

import json
from typing import ClassVar

import pytest

from tests.parsers.conformance import TOOLS, ParserConformance, call
from wtb_local.formats.parsers import get_parser, select_parser
from wtb_local.formats.parsers.plamo3 import THINK_CLOSE, THINK_OPEN

NO_SAMPLES = "no source states a real output of this format (the collections hold none)"


def calls_of(result) -> list[tuple[str, object]]:  # type: ignore[no-untyped-def]
    return [(c.name, json.loads(c.arguments)) for c in result.tool_calls]


class TestHyV4(ParserConformance):
    parser_name = "hy_v4"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"unclosed_call": "<tool_calls><tool_call>search<arg_key>query</arg_key><arg_value>x</arg_value></tool_calls>",
                "junk": "<tool_calls><tool_call>search<arg_key>query</arg_key><arg_value>x</arg_value>JUNK</tool_call></tool_calls>",
                "outside": "<tool_call>search<arg_key>query</arg_key><arg_value>x</arg_value></tool_call>"}

    def bad_then_good_sample(self) -> str:
        return ("<tool_calls><tool_call><arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
                "<tool_call>search<arg_key>query</arg_key><arg_value>good</arg_value></tool_call></tool_calls>")


def test_hy_v4_reads_any_token_suffix_and_its_type_names() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "a": {"type": "uint8"}, "b": {"type": "double"}, "c": {"type": "bool"}, "d": {"type": "dict"}}}}}]
    text = ("<think:x1>plan</think:x1>ok<tool_calls:x1><tool_call:x1>f<arg_key:x1>a</arg_key:x1><arg_value:x1>7"
            "</arg_value:x1><arg_key:x1>b</arg_key:x1><arg_value:x1>2</arg_value:x1><arg_key:x1>c</arg_key:x1>"
            "<arg_value:x1>false</arg_value:x1><arg_key:x1>d</arg_key:x1><arg_value:x1>{\"k\": 1}</arg_value:x1>"
            "</tool_call:x1></tool_calls:x1>")
    got = get_parser("hy_v4").parse(text, tools=tools)
    assert (calls_of(got), got.reasoning, got.content, got.errors) == (
        [("f", {"a": 7, "b": 2, "c": False, "d": {"k": 1}})], "plan", "ok", [])


@pytest.mark.parametrize(("schema", "raw", "value"), [
    ({"type": ["string", "object"]}, '{"a": 1}', {"a": 1}), ({"anyOf": [{"type": "string"}, {"type": "array"}]},
                                                             "[1, 2]", [1, 2]),
    ({"type": "number"}, "5", 5), ({"type": "number"}, "5.0", 5.0), ({"type": "short"}, "3", 3),
    ({"type": "varchar"}, "007", "007"), ({"type": "binary"}, "TRUE", True), ({}, "12", "12"),
    ({"type": "integer"}, "[1]", [1]), ({"type": ["string", "null"]}, "null", None),
])  # fmt: skip
def test_hy_v4_types_values_in_its_readers_order(schema: dict[str, object], raw: str, value: object) -> None:
    """Boolean, integer, number, then JSON for any other declared type (so a union holding a string still
    reads an object), the string, and last JSON or a Python literal; a nullable parameter's null is null."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
                                                                            "properties": {"v": schema}}}}]
    text = f"<tool_calls><tool_call>f<arg_key>v</arg_key><arg_value>{raw}</arg_value></tool_call></tool_calls>"
    assert calls_of(get_parser("hy_v4").parse(text, tools=tools)) == [("f", {"v": value})]


def test_hy_v4_an_unterminated_wrapper_keeps_its_calls_with_an_error() -> None:
    got = get_parser("hy_v4").parse("<tool_calls><tool_call>get_time</tool_call>")
    assert (calls_of(got), got.errors) == ([("get_time", {})], ["no </tool_calls> (an unterminated block); calls kept"])


class TestLing3(ParserConformance):
    parser_name = "ling3"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"no_name": "<tool_call><arg_key>q</arg_key><arg_value>x</arg_value></tool_call>"}

    def bad_then_good_sample(self) -> str:
        return ("<tool_call><arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
                "<tool_call>search<arg_key>query</arg_key><arg_value>good</arg_value></tool_call>")


def test_ling3_thinking_switch() -> None:
    """Ling 3 thinks by default: the prompt opened the block, so tag-less text is reasoning unless thinking is
    switched off."""
    assert get_parser("ling3").parse("still thinking").reasoning == "still thinking"
    assert get_parser("ling3", thinking=True).parse("still thinking").reasoning == "still thinking"
    assert get_parser("ling3", thinking=False).parse("an answer").content == "an answer"


class TestPlamo3(ParserConformance):
    parser_name = "plamo3"
    supports_reasoning = True
    reasoning_open_tag = THINK_OPEN
    reasoning_close_tag = THINK_CLOSE

    def malformed_samples(self) -> dict[str, str]:
        head = THINK_OPEN + THINK_CLOSE + "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
        return {"no_name": head + "<|plamo:begin_tool_arguments:plamo|>{}<|plamo:end_tool_arguments:plamo|>"
                                  "<|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>",
                "bad_json": head + "<|plamo:begin_tool_name:plamo|>search<|plamo:end_tool_name:plamo|>"
                                   "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{query: x"
                                   "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
                                   "<|plamo:end_tool_requests:plamo|>"}

    def bad_then_good_sample(self) -> str:
        bad = get_parser("plamo3").format(None, [call("search", {"query": "good"})])
        return bad.replace("<|plamo:begin_tool_request:plamo|>",
                           "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_arguments:plamo|>{}"
                           "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
                           "<|plamo:begin_tool_request:plamo|>", 1)


def test_plamo3_defaults_to_a_prompt_that_opened_thinking() -> None:
    got = get_parser("plamo3").parse("still thinking<|plamo:end_thi")
    assert (got.reasoning, got.content) == ("still thinking", None)
    off = get_parser("plamo3", thinking=False).parse("an answer<|plamo:tag|>")
    assert (off.reasoning, off.content) == (None, "an answer")


class TestMimo(ParserConformance):
    parser_name = "mimo"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"no_function": "<tool_call>no function here</tool_call>"}

    def bad_then_good_sample(self) -> str:
        return ("<tool_call>\nnot a function\n</tool_call>\n"
                "<tool_call>\n<function=search>\n<parameter=query>\ngood\n</parameter>\n</function>\n</tool_call>")


class TestDots(ParserConformance):
    parser_name = "dots"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"no_invoke": "<dots_function_call>nothing here</dots_function_call>"}

    def bad_then_good_sample(self) -> str:
        return ("<dots_function_call>garbage</dots_function_call>"
                '<dots_function_call><invoke name="search"><parameter name="query">good</parameter></invoke>'
                "</dots_function_call>")


def test_dots_resolves_refs_and_reads_json_bodies() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"where": {"$ref": "#/$defs/Place"}},
        "$defs": {"Place": {"type": "object"}}}}}]
    xml = '<dots_function_call><invoke name="f"><parameter name="where">{"x": 1}</parameter></invoke></dots_function_call>'
    body = '<dots_function_call>{"name": "f", "arguments": {"where": {"x": 1}}}</dots_function_call>'
    assert calls_of(get_parser("dots").parse(xml, tools=tools)) == [("f", {"where": {"x": 1}})]
    assert [(c.name, c.arguments) for c in get_parser("dots").parse(body).tool_calls] == [("f", '{"where": {"x": 1}}')]


class TestGranite42(ParserConformance):
    parser_name = "granite42"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"no_function": "<tool_call>\nnothing\n</tool_call>"}

    def bad_then_good_sample(self) -> str:
        return ("<tool_call>\nbad\n</tool_call>\n<tool_call>\n<function=search>\n<parameter=query>\ngood\n"
                "</parameter>\n</function>\n</tool_call>")


class TestZaya(ParserConformance):
    parser_name = "zaya"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"no_function": "<zyphra_tool_call>\nnothing\n</zyphra_tool_call>"}

    def bad_then_good_sample(self) -> str:
        return ("<zyphra_tool_call>\nbad\n</zyphra_tool_call>\n<zyphra_tool_call>\n<function=search>\n"
                "<parameter=query>\ngood\n</parameter>\n</function>\n</zyphra_tool_call>")


class TestRipple(ParserConformance):
    parser_name = "ripple"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"not_json": "<tool_call>\nnot json at all\n</tool_call>"}

    def bad_then_good_sample(self) -> str:
        return ('<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>\n'
                '<tool_call>\n{"name": "search", "arguments": {"query": "good"}}\n</tool_call>')


class TestStep5(ParserConformance):
    parser_name = "step5"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"no_function": "<tool_call>\nnothing\n</tool_call>"}

    def bad_then_good_sample(self) -> str:
        return ("<tool_call>\nbad\n</tool_call>\n<tool_call>\n<function=search>\n<parameter=query>\ngood\n"
                "</parameter>\n</function>\n</tool_call>")


class TestBeam(ParserConformance):
    parser_name = "beam"
    supports_reasoning = True
    reasoning_open_tag = "<|channel|>analysis<|message|>"
    reasoning_close_tag = "<|end|>"

    def malformed_samples(self) -> dict[str, str]:
        return {"no_parameters": " to=search<|channel|>analysis <|constrain|>xml<|message|>query=x<|call|>"}

    def bad_then_good_sample(self) -> str:
        return (" to=get_weather<|channel|>analysis <|constrain|>xml<|message|>city: Paris<|end|><|start|>assistant"
                ' to=search<|channel|>analysis <|constrain|>xml<|message|><rfl:parameter name="query">\ngood\n'
                "</rfl:parameter><|call|>")

    xfail_cases: ClassVar[dict[str, str]] = {"test_reasoning_prefilled_open_tag": "Beam's prompt ends with <|start|>assistant and the model "
                   "writes the analysis header itself: no prompt pre-fills it, so a reply without it is an answer"}


def test_beam_reasoning_opener_is_written_by_the_model() -> None:
    """Beam's prompt ends with `<|start|>assistant`: the model writes the analysis header itself, so no prompt
    pre-fills it; reasoning, answer and a parameter closed only by the next one are read."""
    text = ("<|channel|>analysis<|message|>Plan.<|end|><|start|>assistant to=f<|channel|>analysis <|constrain|>xml"
            '<|message|><rfl:parameter name="a">\nx\n<rfl:parameter name="b">\ny\n</rfl:parameter><|call|>')
    got = get_parser("beam").parse(text)
    assert (got.reasoning, calls_of(got), got.content, got.errors) == ("Plan.", [("f", {"a": "x", "b": "y"})], None, [])


class TestTrinity(ParserConformance):
    parser_name = "trinity"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"not_json": "<tool_call>\nnot json\n</tool_call>"}

    def bad_then_good_sample(self) -> str:
        return ('<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>\n'
                '<tool_call>\n{"name": "search", "arguments": {"query": "good"}}\n</tool_call>')


class TestSpark25(ParserConformance):
    parser_name = "spark25"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"empty": "x<tool_call></tool_call>y"}

    def bad_then_good_sample(self) -> str:
        return ("<tool_call><arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
                "<tool_call>search<arg_key>query</arg_key><arg_value>good</arg_value></tool_call>")


def test_spark25_reads_bits_as_booleans_only_for_boolean_parameters() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "on": {"type": "boolean"}, "n": {"type": "integer"}, "s": {"type": ["string", "boolean"]}}}}}]
    text = ("<tool_call>f<arg_key>on</arg_key><arg_value>0</arg_value><arg_key>n</arg_key><arg_value>1</arg_value>"
            "<arg_key>s</arg_key><arg_value>1</arg_value></tool_call>")
    assert calls_of(get_parser("spark25").parse(text, tools=tools)) == [("f", {"on": False, "n": 1, "s": "1"})]


class TestIQuestQ1(ParserConformance):
    parser_name = "iquest_q1"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"unbalanced": "<iquest_tool_call>search<arg_key>query</arg_key><arg_value>x</iquest_tool_call>",
                "no_name": "<iquest_tool_call><arg_key>query</arg_key><arg_value>x</arg_value></iquest_tool_call>"}

    def bad_then_good_sample(self) -> str:
        return ("<iquest_tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</iquest_tool_call>"
                "<iquest_tool_call>search<arg_key>query</arg_key><arg_value>good</arg_value></iquest_tool_call>")


class TestInternlm(ParserConformance):
    parser_name = "internlm"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"not_json": "<|action_start|><|plugin|>{name: x}<|action_end|>",
                "no_object": "<|action_start|><|plugin|>search<|action_end|>"}

    def bad_then_good_sample(self) -> str:
        return ('<|action_start|><|plugin|>{"name": "get_weather", "parameters": {"city": }<|action_end|>'
                '<|action_start|><|plugin|>{"name": "search", "parameters": {"query": "good"}}<|action_end|>')


class TestGigaChat35(ParserConformance):
    parser_name = "gigachat35"
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"no_invoke": "<｜GCML｜tool_calls>\nnothing\n</｜GCML｜tool_calls>"}

    def bad_then_good_sample(self) -> str:
        return ('<｜GCML｜tool_calls>\n<｜GCML｜invoke name="">\n</｜GCML｜invoke>\n<｜GCML｜invoke name="search">\n'
                '<｜GCML｜parameter name="query" string="true">good</｜GCML｜parameter>\n</｜GCML｜invoke>\n'
                "</｜GCML｜tool_calls>")


def test_gigachat35_errors_speak_gcml() -> None:
    got = get_parser("gigachat35").parse('<｜GCML｜tool_calls>\n<｜GCML｜invoke name="get_time">\n</｜GCML｜invoke>\n')
    assert (calls_of(got), got.errors) == ([("get_time", {})], ["no </｜GCML｜tool_calls> (an unterminated block); calls kept"])


class TestJamba(ParserConformance):
    parser_name = "jamba"
    no_real_outputs = NO_SAMPLES

    def malformed_samples(self) -> dict[str, str]:
        return {"not_json": "<tool_calls>[{name: x}]</tool_calls>"}

    def bad_then_good_sample(self) -> str:
        return ('<tool_calls>[{"name": "get_weather", "arguments": {"city": }}, '
                '{"name": "search", "arguments": {"query": "good"}}]</tool_calls>')


class TestGranite20bFc(ParserConformance):
    parser_name = "granite_20b_fc"
    no_real_outputs = NO_SAMPLES

    def malformed_samples(self) -> dict[str, str]:
        return {"no_object": "<function_call> search(query=x)", "not_json": "<function_call> {name: x}"}

    def bad_then_good_sample(self) -> str:
        return ('<function_call> {"name": "get_weather", "arguments": {"city": }} '
                '<function_call> {"name": "search", "arguments": {"query": "good"}}')


class TestStep3(ParserConformance):
    parser_name = "step3"
    supports_reasoning = True
    no_real_outputs = NO_SAMPLES

    def malformed_samples(self) -> dict[str, str]:
        return {"no_invoke": "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>nothing"
                             "<｜tool_call_end｜><｜tool_calls_end｜>"}

    def bad_then_good_sample(self) -> str:
        return ('<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="">'
                "</steptml:invoke><｜tool_call_end｜><｜tool_call_begin｜>function<｜tool_sep｜>"
                '<steptml:invoke name="search"><steptml:parameter name="query">good</steptml:parameter>'
                "</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>")


@pytest.mark.parametrize(("model", "parser"), [
    ("tencent/Hy4-preview", "hy_v4"), ("tencent/Hy4-preview-FP8", "hy_v4"), ("tencent/Hy3", "hy_v3"),
    ("inclusionAI/Ling-3.0-flash", "ling3"), ("pfnet/plamo-3-31b-chat", "plamo3"),
    ("XiaomiMiMo/MiMo-V2.5", "mimo"), ("XiaomiMiMo/MiMo-V2.5-Pro", "mimo"), ("XiaomiMiMo/MiMo-V2-Flash", "mimo"),
    ("dots-studio/dots3-note-prev", "dots"), ("ibm-granite/granite-4.2-8b", "granite42"),
    ("ibm-granite/granite-4.0-h-small", "granite4"), ("ibm-granite/granite-20b-functioncalling", "granite_20b_fc"),
    ("Zyphra/ZAYA1-8B", "zaya"), ("Zyphra/ZAYA1-74B-Preview", "zaya"), ("stepfun-ai/Step-5", "step5"),
    ("stepfun-ai/step3", "step3"), ("stepfun-ai/Step-3.5-Flash", "step3p5"),
    ("arcee-ai/Trinity-Large-Thinking", "trinity"), ("IQuestLab/IQuest-Q1", "iquest_q1"),
    ("internlm/Intern-S1", "internlm"), ("internlm/internlm2_5-7b-chat", "internlm"),
    ("ai-sage/GigaChat3.5-432B-A28B", "gigachat35"), ("ai-sage/GigaChat3.1-10B-A1.8B", "gigachat3"),
    ("Nanbeige/Nanbeige4.2-3B", "qwen3_coder"), ("ai21labs/AI21-Jamba-Mini-1.7", "jamba"),
])  # fmt: skip
def test_selection_by_model_id(model: str, parser: str) -> None:
    assert select_parser(model) == parser


@pytest.mark.parametrize(("config", "parser"), [
    ({"architectures": ["Step5ForCausalLM"]}, "step5"), ({"architectures": ["Step5ForConditionalGeneration"]}, "step5"),
    ({"architectures": ["RicursiveForCausalLM"]}, "ripple"), ({"architectures": ["JambaForCausalLM"]}, "jamba"), ({"architectures": ["InternS1ForConditionalGeneration"]}, "internlm"),
])  # fmt: skip
def test_selection_by_config(config: dict[str, object], parser: str) -> None:
    assert select_parser("/local/checkpoint", config=config) == parser


def test_templates_select_their_parser() -> None:
    assert select_parser("x", chat_template="{{ '<zyphra_tool_call>' }}") == "zaya"
    assert select_parser("x", chat_template="{{ '<iquest_tool_call>' }}") == "iquest_q1"
    assert select_parser("x", chat_template="... <|role_sep|> ... <｜GCML｜tool_calls> ...") == "gigachat35"
    assert select_parser("x", chat_template="{{ '<dots_function_call>' }}") == "dots"


def test_tools_are_offered_to_every_case() -> None:
    assert TOOLS  # the suite's tools, imported so the module reads as the others do


def test_kimi_history_ids_continue_the_conversations_count() -> None:
    """Kimi-K2's ids are `functions.NAME:IDX` with IDX counting the calls of the whole conversation (Moonshot's
    tool-call guidance), so a later reply starts above 0 and a name may hold dots: both kept as written, and
    `format` writes a call's own id back into the history."""
    from wtb_local.contract.schema import ParsedCall

    text = ("<|tool_calls_section_begin|><|tool_call_begin|>functions.search:5<|tool_call_argument_begin|>"
            '{"query": "x"}<|tool_call_end|><|tool_call_begin|>functions.mcp.files.read:6'
            '<|tool_call_argument_begin|>{"path": "a"}<|tool_call_end|><|tool_calls_section_end|>')
    got = get_parser("kimi_k2").parse(text)
    assert ([(c.id, c.name, json.loads(c.arguments)) for c in got.tool_calls], got.errors) == (
        [("functions.search:5", "search", {"query": "x"}), ("functions.mcp.files.read:6", "mcp.files.read",
                                                               {"path": "a"})], [])
    history = get_parser("kimi_k2").format(None, [ParsedCall(id="functions.search:5", name="search",
                                                             arguments='{"query": "x"}')])
    assert "functions.search:5<|tool_call_argument_begin|>" in history


@pytest.mark.parametrize("parser", ["qwen3_coder", "mimo", "zaya", "dots", "hy_v4", "iquest_q1"])
def test_a_non_finite_number_stays_the_text_the_model_wrote(parser: str) -> None:
    """docs/parser-policies.md, "Non-finite numbers": JSON has no inf or NaN, so a number parameter written
    `inf`, `-inf` or `nan` keeps its text (a string the evaluator compares as written), never a float that
    would serialise as the non-JSON `Infinity`."""
    from tests.parsers.conformance import call as make_call

    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "a": {"type": "number"}, "b": {"type": "number"}, "c": {"type": "number"}, "d": {"type": "number"}}}}}]
    p = get_parser(parser)
    text = p.format(None, [make_call("f", {"a": "inf", "b": "-inf", "c": "nan", "d": "1.5"})])
    got = p.parse(text, tools=tools)
    assert [(c.name, json.loads(c.arguments)) for c in got.tool_calls] == [
        ("f", {"a": "inf", "b": "-inf", "c": "nan", "d": 1.5})], text
    assert "Infinity" not in got.tool_calls[0].arguments and "NaN" not in got.tool_calls[0].arguments


def test_a_prompt_ending_in_plamos_think_opener_opens_reasoning() -> None:
    """formats/reasoning_blocks.py knows PLaMo 3's block, so a step whose prompt ends with its opener is read as
    starting inside the reasoning (the per-step pre-fill), and one closing it empty as thinking off."""
    from wtb_local.formats.reasoning_blocks import empty_at_end, open_at_end

    assert open_at_end(f"assistant{THINK_OPEN}") == THINK_OPEN
    assert empty_at_end(f"assistant{THINK_OPEN}{THINK_CLOSE}") == (THINK_OPEN, THINK_CLOSE)
