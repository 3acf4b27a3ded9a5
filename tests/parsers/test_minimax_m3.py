"""MiniMax-M3 parser: conformance plus nested values, typing and the upstream bug inputs."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.parsers import get_parser

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
