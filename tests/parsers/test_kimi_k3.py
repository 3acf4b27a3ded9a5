"""Kimi-K3 (XTML) parser: conformance plus channels, escaping and the upstream bug inputs."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser

O, C, S = "<|open|>", "<|close|>", "<|sep|>"


def call(name: str, args: str, index: int = 1) -> str:
    return f'{O}call tool="{name}" index="{index}"{S}{args}{C}call{S}'


def arg(key: str, kind: str, value: str) -> str:
    return f'{O}argument key="{key}" type="{kind}"{S}{value}{C}argument{S}'


class TestKimiK3(ParserConformance):
    parser_name = "kimi_k3"
    supports_reasoning = True
    reasoning_open_tag = f"{O}think{S}"
    reasoning_close_tag = f"{C}think{S}"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "nameless_call": f"{O}tools{S}" + call("", arg("q", "string", "x")) + f"{C}tools{S}",
            "not_json_number": f"{O}tools{S}" + call("search", arg("limit", "number", "three")) + f"{C}tools{S}",
            "empty_tools": f"{O}tools{S}search(query=x){C}tools{S}",
            "unterminated_tools": f"{O}tools{S}" + call("search", arg("query", "string", "x")),
        }

    def bad_then_good_sample(self) -> str:
        return (f"{O}tools{S}" + call("", arg("q", "string", "x"))
                + call("search", arg("query", "string", "good"), 2) + f"{C}tools{S}")


def calls(result) -> list[tuple[str, dict]]:
    return [(c.name, json.loads(c.arguments)) for c in result.tool_calls]


def test_types_escaping_and_raw_bodies() -> None:
    text = (f"{O}response{S}{C}response{S}{O}tools{S}"
            + call("a&amp;b", arg("q", "string", " say &quot;hi&quot; ") + arg("n", "number", "1.5")
                   + arg("b", "boolean", "true") + arg("z", "null", "null") + arg("o", "object", '{"k": [1]}'))
            + f"{C}tools{S}{C}message{S}")
    result = get_parser("kimi_k3").parse(text)
    assert calls(result) == [("a&b", {"q": " say &quot;hi&quot; ", "n": 1.5, "b": True, "z": None, "o": {"k": [1]}})]
    assert (result.content, result.errors) == (None, [])


def test_a_json_block_instead_of_arguments() -> None:
    text = f"{O}tools{S}" + call("search", f'{O}json type="object"{S}{{"query": "x", "limit": 2}}{C}json{S}') + f"{C}tools{S}"
    result = get_parser("kimi_k3").parse(text)
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("search", '{"query": "x", "limit": 2}')]


def test_thinking_off_starts_in_the_response_channel() -> None:
    result = get_parser("kimi_k3").parse(f"Paris is sunny.{C}response{S}{C}message{S}<|end_of_msg|>")
    assert (result.reasoning, result.content, result.errors) == (None, "Paris is sunny.", [])


def test_cut_off_while_thinking_is_reasoning() -> None:
    result = get_parser("kimi_k3", thinking=True).parse("Let me think about", finish_reason="length")
    assert (result.reasoning, result.content) == ("Let me think about", None)


# --- the known upstream bugs: what wtb_local does with the same input ---------------------------------------


def test_xtml_with_no_tools_declared_is_read_not_leaked() -> None:
    """sglang#39583: with no tools declared the tools channel leaked into the content (SGLang now strips it):
    wtb_local reads the call and leaves no XTML in the content."""
    text = (f"{O}response{S}On it.{C}response{S}{O}tools{S}" + call("read_agent", arg("id", "string", "worker_1"))
            + f"{C}tools{S}{C}message{S}")
    result = get_parser("kimi_k3").parse(text, tools=None)
    assert (calls(result), result.content, result.errors) == ([("read_agent", {"id": "worker_1"})], "On it.", [])


def test_tools_without_the_think_transition() -> None:
    """vllm#53246: the model went from its reasoning straight to the tools channel, without closing the think
    channel or opening a response; vLLM returned empty calls. The call is read; the reasoning ends there."""
    text = "I should look it up." + f"{O}tools{S}" + call("search", arg("query", "string", "x")) + f"{C}tools{S}"
    result = get_parser("kimi_k3", thinking=True).parse(text)
    assert (result.reasoning, result.content, calls(result), result.errors) == (
        "I should look it up.", None, [("search", {"query": "x"})], [])


def test_a_call_inside_the_think_channel_is_counted_not_executed() -> None:
    from wtb_local.formats.parsers import parse_completion

    inner = f"{O}tools{S}" + call("search", arg("query", "string", "inside")) + f"{C}tools{S}"
    text = f"Maybe {inner} no.{C}think{S}{O}response{S}Done.{C}response{S}"
    result = parse_completion(get_parser("kimi_k3", thinking=True), text, finish_reason="stop")
    assert (result.tool_calls, result.content, result.calls_in_reasoning) == ([], "Done.", 1)
