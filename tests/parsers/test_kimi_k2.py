"""Kimi-K2 parser: conformance plus family cases."""

from __future__ import annotations

from tests.parsers.conformance import ParserConformance
from wtb_local.contract.schema import ParsedCall
from wtb_local.formats.parsers import get_parser

B, E = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
C, A, D = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"


class TestKimiK2(ParserConformance):
    parser_name = "kimi_k2"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "bad_json": f'{B}{C}functions.search:0{A}{{"query": x}}{D}{E}',
            "bad_id": f'{B}{C}search{A}{{"query": "x"}}{D}{E}',
            "no_section": f'{C}functions.search:0{A}{{"query": "x"}}{D}',
        }

    def bad_then_good_sample(self) -> str:
        return (
            f'{B}<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{{"city": "Paris"'
            f"<|tool_call_end|><|tool_call_begin|>functions.search:1<|tool_call_argument_begin|>"
            f'{{"query": "good"}}<|tool_call_end|>{E}'
        )


def test_native_ids_kept_and_reused_by_format() -> None:
    parser = get_parser("kimi_k2")
    raw = f'{B}{C}functions.search:7{A}{{"query": "x"}}{D}{E}'
    calls = parser.parse(raw).tool_calls
    assert [c.id for c in calls] == ["functions.search:7"]
    assert parser.format(None, calls) == raw
    assert "functions.f:0" in parser.format(None, [ParsedCall(name="f", arguments="{}")])


def test_singular_section_token_and_thinking() -> None:
    raw = (
        "<think>plan</think>Ok.<|tool_call_section_begin|><|tool_call_begin|>functions.f:0"
        "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_call_section_end|>"
    )
    result = get_parser("kimi_k2").parse(raw)
    assert result.reasoning == "plan" and result.content == "Ok." and result.tool_calls[0].name == "f"
