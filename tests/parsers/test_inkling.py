"""Inkling parser: conformance plus block kinds, name headers and the `&quot;` sampling fault."""

from __future__ import annotations

import json
from typing import ClassVar

from tests.parsers.conformance import TOOLS, ParserConformance, call
from wtb_local.formats.parsers import get_parser, select_parser

M, END = "<|message_model|>", "<|end_message|>"
TOOL = "<|content_invoke_tool_json|>"


class TestInkling(ParserConformance):
    parser_name = "inkling"
    supports_reasoning = True
    reasoning_open_tag = "<|content_thinking|>"
    reasoning_close_tag = END
    xfail_cases: ClassVar[dict[str, str]] = {"test_call_inside_closed_reasoning_is_dropped_and_counted": (
        "a tool block's token ends an open thinking block (vLLM's engine reads it so too): Inkling has no call "
        "inside a closed reasoning block; test_a_tool_token_ends_the_thinking_block")}

    def malformed_samples(self) -> dict[str, str]:
        return {
            "not_json": f"{TOOL}search(query=x){END}",
            "broken_json": f'{TOOL}{{"name": "search", "args": {{"query": }}{END}',
            "no_name": f'{TOOL}{{"args": {{"query": "x"}}}}{END}',
        }

    def bad_then_good_sample(self) -> str:
        return f'{TOOL}{{"name": "get_weather", "args": {{"city": }}{END}{M}search{TOOL}{{"name": "search", "args": {{"query": "good"}}}}{END}'

    def test_reasoning_prefilled_open_tag(self) -> None:
        """The prompt pre-fills `<|content_thinking|>` when it opens the reasoning block: the run's `thinking`
        option says so, and the reply then starts inside the block."""
        text = self.parser.format("Answer.", [call("search", {"query": "x"})], "Thinking it over.")
        text = text.replace(self.reasoning_open_tag, "", 1)
        result = get_parser("inkling", thinking=True).parse(text, tools=TOOLS)
        assert (result.reasoning, result.content, result.errors) == ("Thinking it over.", "Answer.", [])
        self.assert_calls(result, [call("search", {"query": "x"})], text)


def calls(result) -> list[tuple[str, dict]]:
    return [(c.name, json.loads(c.arguments)) for c in result.tool_calls]


def test_quot_for_a_quote_is_read() -> None:
    """The model sometimes samples `&quot;` where a structural quote belongs (eugr/spark-vllm-docker PR #329);
    the payload is read with the entity unescaped, only when it is not JSON as written."""
    text = f'{TOOL}{{"name":"fetch_url","args":{{"url":"https://example.com/a&quot;}}}}{END}'
    assert calls(get_parser("inkling").parse(text)) == [("fetch_url", {"url": "https://example.com/a"})]
    kept = f'{TOOL}{{"name":"write_note","args":{{"text":"say &quot;hi&quot;"}}}}{END}'
    assert calls(get_parser("inkling").parse(kept)) == [("write_note", {"text": "say &quot;hi&quot;"})]


def test_headers_blocks_and_ends() -> None:
    text = (f"<|content_thinking|>hm{END}{M}<|content_text|>see <|content_text|> token{END}"
            f"{M}search{TOOL}{{\"name\": \"search\", \"arguments\": {{\"query\": \"x\"}}}}<|content_model_end_sampling|>"
            f"{M}<|content_tool_error|>boom{END}")
    result = get_parser("inkling").parse(text, tools=TOOLS)
    assert (result.reasoning, result.content, calls(result), result.errors) == (
        "hm", "see  tokenboom", [("search", {"query": "x"})], [])


def test_a_call_cut_at_the_token_limit_is_an_error() -> None:
    result = get_parser("inkling").parse(f'{TOOL}{{"name":"search","args":{{"query":"x', finish_reason="length")
    assert (result.tool_calls, result.errors) == ([], ["truncated tool call"])


def test_a_tool_token_ends_the_thinking_block() -> None:
    text = f'<|content_thinking|>let me look {TOOL}{{"name": "search", "args": {{"query": "x"}}}}{END}'
    result = get_parser("inkling").parse(text, tools=TOOLS)
    assert (result.reasoning, calls(result), result.errors) == ("let me look", [("search", {"query": "x"})], [])


def test_selection() -> None:
    assert [select_parser(m) for m in ("thinkingmachines/Inkling", "thinkingmachines/Inkling-Small")] == ["inkling"] * 2
