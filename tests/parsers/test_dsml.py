"""DeepSeek DSML parsers (V3.2, V4, V4.1): conformance, the type marker, the generations' block names, and
what wtb_local does with the inputs of the known upstream DSML bugs."""

from __future__ import annotations

import json

from tests.parsers.conformance import TOOLS, ParserConformance
from wtb_local.parsers import get_parser, parse_completion

D = "｜DSML｜"


def block(name: str, params: list[tuple[str, str, str]], kind: str = "function_calls", space: str = "") -> str:
    inner = "\n".join(f'<{D}{space}parameter name="{k}" string="{s}">{v}</{D}{space}parameter>' for k, s, v in params)
    return (f"<{D}{space}{kind}>\n<{D}{space}invoke name=\"{name}\">\n{inner}\n</{D}{space}invoke>\n"
            f"</{D}{space}{kind}>")


def calls(result) -> list[tuple[str, dict]]:
    return [(c.name, json.loads(c.arguments)) for c in result.tool_calls]


class _Dsml(ParserConformance):
    supports_reasoning = True
    kind = "function_calls"
    space = ""

    def malformed_samples(self) -> dict[str, str]:
        k, s = self.kind, self.space
        return {
            "nameless_invoke": f'<{D}{s}{k}>\n<{D}{s}invoke name="">\n</{D}{s}invoke>\n</{D}{s}{k}>',
            "not_json_marked_false": block("search", [("limit", "false", "three")], k, s),
            "block_without_invoke": f"<{D}{s}{k}>\nsearch(query=x)\n</{D}{s}{k}>",
            "unterminated_block": block("search", [("query", "true", "x")], k, s).rsplit("\n", 1)[0],
        }

    def bad_then_good_sample(self) -> str:
        k, s = self.kind, self.space
        return (f'<{D}{s}{k}>\n<{D}{s}invoke name="">\n</{D}{s}invoke>\n<{D}{s}invoke name="search">\n'
                f'<{D}{s}parameter name="query" string="true">good</{D}{s}parameter>\n</{D}{s}invoke>\n</{D}{s}{k}>')


class TestDeepSeekV32(_Dsml):
    parser_name = "deepseek_v32"


class TestDeepSeekV4(_Dsml):
    parser_name = "deepseek_v4"
    kind = "tool_calls"


class TestDeepSeekV41(_Dsml):
    parser_name = "deepseek_v41"
    kind = "calls"
    space = " "
