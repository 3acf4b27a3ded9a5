"""The other readers of the Qwen3-Coder XML format (`qwen3_xml`, `step3p5`) and the 2026 models that write
it (Qwen3.5/3.6/3.8, Nemotron 3, Step-3.5): conformance suites, selection, and what wtb_local does with the
inputs of the known parser bugs of these families (docs/parser-policies.md, "2026 families")."""

from __future__ import annotations

import json

import pytest

from tests.parsers import test_qwen3_coder as qwen3_coder
from tests.parsers.test_qwen3_coder import block
from wtb_local.formats.parsers import get_parser, parse_completion, select_parser

ARRAY_TOOLS = [{"type": "function", "function": {"name": "todo", "parameters": {"type": "object", "properties": {
    "items": {"type": "array"}, "opts": {"type": "object"}, "n": {"type": "integer"}, "ref": {"type": "string"}}}}}]


class TestQwen3Xml(qwen3_coder.TestQwen3Coder):
    parser_name = "qwen3_xml"

    def test_selection(self) -> None:
        assert select_parser("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8") == "qwen3_xml"


class TestStep3p5(qwen3_coder.TestQwen3Coder):
    parser_name = "step3p5"

    def test_selection(self) -> None:
        assert select_parser("stepfun-ai/Step-3.5-Flash") == "step3p5"
        assert select_parser("stepfun-ai/Step-3.7-Flash") == "step3p5"
        assert select_parser("/m", config={"model_type": "step3p5"}) == "step3p5"


@pytest.mark.parametrize(("model_id", "parser"), [
    ("Qwen/Qwen3.5-4B", "qwen3_coder"), ("Qwen/Qwen3.5-397B-A17B", "qwen3_coder"),
    ("Qwen/Qwen3.6-35B-A3B", "qwen3_coder"), ("Qwen/Qwen3.8-32B", "qwen3_coder"),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "qwen3_coder"),
    ("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B", "qwen3_coder"),
    ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "qwen3_xml"),
    ("Qwen/Qwen3-8B", "hermes"), ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3_coder"),
])
def test_selection_by_model_id(model_id: str, parser: str) -> None:
    assert select_parser(model_id) == parser


def test_selection_by_config() -> None:
    assert select_parser("/models/local", config={"model_type": "qwen3_5_moe"}) == "qwen3_coder"
    assert select_parser("/models/local", config={"architectures": ["Qwen3_5ForConditionalGeneration"]}) == \
        "qwen3_coder"


@pytest.mark.parametrize("name", ["qwen3_coder", "qwen3_xml", "step3p5"])
def test_json_literals_inside_array_and_object_parameters(name: str) -> None:
    # vLLM's qwen3_xml read array parameters with ast.literal_eval, so JSON true/false/null became strings
    text = block("todo", "<parameter=items>\n[true, false, null, \"x\"]\n</parameter>\n"
                         "<parameter=opts>\n{\"on\": true, \"off\": null}\n</parameter>\n")
    result = get_parser(name).parse(text, tools=ARRAY_TOOLS)
    assert json.loads(result.tool_calls[0].arguments) == {"items": [True, False, None, "x"],
                                                          "opts": {"on": True, "off": None}}


@pytest.mark.parametrize("name", ["qwen3_coder", "qwen3_xml", "step3p5"])
def test_two_calls_in_one_reply_are_both_read(name: str) -> None:
    # vLLM's qwen3_coder dropped the second of two calls arriving in one streaming delta
    text = block("todo", "<parameter=n>\n1\n</parameter>\n") + "\n" + block("todo", "<parameter=n>\n2\n</parameter>\n")
    result = get_parser(name).parse(text, tools=ARRAY_TOOLS)
    assert [json.loads(c.arguments) for c in result.tool_calls] == [{"n": 1}, {"n": 2}]


def test_schema_decides_digits() -> None:
    # Step-3.5 (llama.cpp): a string parameter stays "5123123", an integer one becomes a number
    text = block("todo", "<parameter=ref>\n5123123\n</parameter>\n<parameter=n>\n42555916\n</parameter>\n")
    result = get_parser("step3p5", thinking=True).parse("Call it\n</think>\n" + text, tools=ARRAY_TOOLS)
    assert json.loads(result.tool_calls[0].arguments) == {"ref": "5123123", "n": 42555916}
    assert result.reasoning == "Call it"


@pytest.mark.parametrize("name", ["qwen3_coder", "qwen3_xml", "step3p5"])
def test_a_call_written_inside_think_is_reasoning_and_counted(name: str) -> None:
    # Qwen calls tools inside <think> (lmstudio-bug-tracker#2045; QwenLM/Qwen3#1459): after a pre-filled
    # <think>, a call before </think> is part of the reasoning (not executed), counted
    text = "Let me look.\n" + block("todo", "<parameter=n>\n1\n</parameter>\n") + "\nNo, answer first.\n</think>\n\nHi."
    result = parse_completion(get_parser(name, thinking=True), text, tools=ARRAY_TOOLS, finish_reason="stop")
    assert (result.tool_calls, result.content, result.calls_in_reasoning) == ([], "Hi.", 1)
    assert result.reasoning.startswith("Let me look.")


def test_reasoning_does_not_leak_into_content_on_a_tool_turn() -> None:
    # QwenLM/Qwen3.8#26, NVIDIA/NemoClaw#6992: reasoning (or a bare </think>) left in the content
    text = "I'm\nthinking\n</think>\n" + block("todo", "<parameter=n>\n1\n</parameter>\n")
    for options in ({"thinking": True}, {}):
        result = get_parser("qwen3_coder", **options).parse(text, tools=ARRAY_TOOLS)
        assert (result.reasoning, result.content, len(result.tool_calls)) == ("I'm\nthinking", None, 1)


def test_a_call_after_an_unclosed_think_is_read() -> None:
    # ollama#13764: the Nemotron parser stayed in thinking when </think> was missing
    text = "I'm thinking\n" + block("todo", "<parameter=n>\n1\n</parameter>\n")
    result = get_parser("qwen3_coder", thinking=True).parse(text, tools=ARRAY_TOOLS)
    assert (result.reasoning, len(result.tool_calls), result.errors) == ("I'm thinking", 1, [])


def test_nemotron_history_form() -> None:
    # Nemotron 3 writes `<think></think>` before the calls of a turn without reasoning
    text = "<think></think>" + block("todo", "<parameter=n>\n1\n</parameter>\n")
    result = get_parser("qwen3_coder").parse(text, tools=ARRAY_TOOLS)
    assert (result.reasoning, result.content, result.errors) == (None, None, [])
    assert json.loads(result.tool_calls[0].arguments) == {"n": 1}
