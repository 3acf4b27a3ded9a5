"""Kimi-K3 (XTML) parser: conformance plus channels, escaping and the upstream bug inputs."""

from __future__ import annotations

import json

from tests.parsers.conformance import ParserConformance
from wtb_local.parsers import get_parser

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
