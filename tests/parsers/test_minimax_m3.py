"""MiniMax-M3 parser: conformance plus nested values, typing and the upstream bug inputs."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.formats.parsers import get_parser

NS = "]<]minimax[>["
OPEN, CLOSE = f"{NS}<tool_call>", f"{NS}</tool_call>"


def invoke(name: str, body: str) -> str:
    return f'{NS}<invoke name="{name}">{body}{NS}</invoke>\n'


def el(key: str, value: str) -> str:
    return f"{NS}<{key}>{value}{NS}</{key}>"


class TestMiniMaxM3(ParserConformance):
    parser_name = "minimax_m3"
    supports_reasoning = True
    reasoning_open_tag = "<mm:think>"
    reasoning_close_tag = "</mm:think>"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "no_invoke": f"{OPEN}\nget_weather(city=Paris)\n{CLOSE}",
            "nameless_invoke": f"{OPEN}\n" + invoke("", el("city", "Paris")) + CLOSE,
            "unclosed_block": f"{OPEN}\n" + invoke("get_weather", el("city", "Paris")),
            "stray_close": f"{OPEN}\n" + invoke("get_weather", f"{NS}</city>") + CLOSE,
        }

    def bad_then_good_sample(self) -> str:
        return f"{OPEN}\n" + invoke("", el("x", "1")) + invoke("search", el("query", "good")) + CLOSE


def calls(result) -> list[tuple[str, dict]]:
    return [(c.name, json.loads(c.arguments)) for c in result.tool_calls]


TOOLS = [{"type": "function", "function": {"name": "order", "parameters": {"type": "object", "properties": {
    "user_id": {"type": "integer"}, "note": {"type": "string"}, "zip": {"type": "string"},
    "shipping": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}}},
    "items": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}}},
    "meta": {"type": "object"}}}}}]


def test_nested_values_typed_by_the_schema() -> None:
    body = (el("user_id", "018956") + el("note", " 42 ") + el("zip", "007")
            + el("shipping", el("city", "Oslo") + el("zip", "0150"))
            + el("items", el("item", el("sku", "A1") + el("qty", "2")) + el("item", el("sku", "B2") + el("qty", "1")))
            + el("meta", el("hops", "2") + el("fee", "0.5") + el("tags", el("item", "x")) + el("ok", "true")))
    result = get_parser("minimax_m3").parse("</mm:think>" + f"{OPEN}\n" + invoke("order", body) + CLOSE, tools=TOOLS)
    assert calls(result) == [("order", {
        "user_id": 18956, "note": " 42 ", "zip": "007", "shipping": {"city": "Oslo", "zip": 150},
        "items": [{"sku": "A1", "qty": 2}, {"sku": "B2", "qty": 1}],
        "meta": {"hops": 2, "fee": 0.5, "tags": ["x"], "ok": True}})]
    assert result.errors == []


def test_repeated_tags_make_an_array_and_empty_containers_read_back() -> None:
    body = el("tags", "a") + el("tags", "b") + el("meta", "") + el("l", "[]") + el("n", "null")
    result = get_parser("minimax_m3").parse(f"{OPEN}\n" + invoke("f", body) + CLOSE, tools=[
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "string"}}, "meta": {"type": "object"}}}}}])
    assert calls(result) == [("f", {"tags": ["a", "b"], "meta": {}, "l": [], "n": None})]


def test_thinking_modes() -> None:
    parser = get_parser("minimax_m3")
    assert (parser.parse("<mm:think>Plan.</mm:think>Done.").reasoning, parser.parse("</mm:think>Done.").content) == (
        "Plan.", "Done.")
    assert get_parser("minimax_m3", thinking=True).parse("Plan.</mm:think>Done.").reasoning == "Plan."


# --- the known upstream bugs: what wtb_local does with the same input ---------------------------------------


def test_hyphenated_parameter_names() -> None:
    """vllm-ascend#12815: parameter names such as `-A` and `-n` broke XML parsing."""
    body = el("-A", "3") + el("-n", "10") + el("pattern", "TODO")
    result = get_parser("minimax_m3").parse(f"{OPEN}\n" + invoke("grep", body) + CLOSE)
    assert (calls(result), result.errors) == ([("grep", {"-A": 3, "-n": 10, "pattern": "TODO"})], [])


def test_no_markup_or_namespace_token_leaks_into_content() -> None:
    """vllm#51073 (the Rust MiniMax-M3 parser failed on MXFP8 output and leaked the markup and the namespace
    token into the content) and llama.cpp PR #24523 (the namespace token mis-segmented next to text)."""
    text = ("<mm:think>Need the weather.</mm:think>Let me check.]<]minimax[>[<tool_call>\n"
            + invoke("get_weather", el("city", "São Paulo") + el("unit", "c")) + CLOSE)
    result = get_parser("minimax_m3").parse(text)
    assert (calls(result), result.content, result.reasoning, result.errors) == (
        [("get_weather", {"city": "São Paulo", "unit": "c"})], "Let me check.", "Need the weather.", [])


def test_markup_inside_a_string_value_stays_text() -> None:
    result = get_parser("minimax_m3").parse(f"{OPEN}\n" + invoke("write_note", el("text", "<b>x</b> & y")) + CLOSE)
    assert calls(result) == [("write_note", {"text": "<b>x</b> & y"})]
