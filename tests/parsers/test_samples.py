"""Every real completion of output_samples.jsonl through the parser auto-selected for its model.

Comparison: content null == "", whitespace stripped, arguments compared as parsed JSON (raw text when
upstream passes unparsable arguments through), and a `<think>` block that an upstream test of the tool
parser alone left in content counts as reasoning (in a serving pipeline the reasoning parser takes it first).
Where our documented policy differs from upstream's expectation (upstream returned the text and we recover a
call, prose kept, ...), the sample is declared in OURS with the policy and our exact result. Every sample's
errors are asserted exactly (ERRORS); a call recovered from an unterminated block must carry one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from wtb_local.contract.schema import ParseResult
from wtb_local.formats.parsers import get_parser, select_parser

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "parsers" / "output_samples.jsonl"
SAMPLES = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]

# Samples whose upstream test ran with thinking enabled (the prompt pre-filled the opening tag).
OPTIONS: dict[int, dict[str, Any]] = {
    16: {"thinking": True},  # qwen3 WITHOUT_THINK (vLLM 2026): tag-less output is truncated reasoning
    18: {"thinking": True},  # Qwen3.5 TOOL_CALL_NO_THINK_END
    189: {"thinking": True},  # seed_oss NO_TOKENS: thinking on, tag-less output is reasoning
}

# Our documented parser policies (docs/parsers-and-templates.md, "Parser policies"), named where a sample's
# result follows one.
PROSE = "prose kept as content (vLLM drops text around calls)"
BROKEN = "a broken call is kept with its raw arguments and an error (upstream returns the text or skips it)"
UNTERMINATED = "a call read from an unterminated block is kept with an error (upstream returns the text)"
REASONING = "an unclosed <think> is reasoning (vLLM 2026; older vLLM kept it as content)"

# line -> (policy, our exact content, reasoning, [[name, arguments text], ...]) where our result differs from
# the upstream expectation. Asserted exactly; an entry whose sample matches upstream fails (remove it).
OURS: dict[int, tuple[str, str | None, str | None, list[list[str]]]] = {
    3: (BROKEN + "; " + UNTERMINATED, None, None, [["final_answer", '{"trigger": true}']]),
    15: (REASONING, None, "This is a reasoning section", []),
    19: (PROSE, "Here is the result: Would you like to know more?", None, [["getOpenIncidentsTool", "{}"]]),
    22: (BROKEN, None, None, [["invalidTool", "{invalid json}"]]),
    29: (BROKEN + "; the valid object after it is read too", None, None,
         [["get_weather", "{"], ["get_weather", "{}"]]),
    55: (PROSE, "I will help you get the weather info.\n\n\n\nmeaningwhile, I will also check the weather in Shanghai.",
         None, [["get_weather", '{"city": "Beijing", "date": "2025-08-01"}'],
                ["get_weather", '{"city": "Shanghai", "date": "2025-08-01"}']]),
    56: (UNTERMINATED, None, None, [["get_weather", '{"city": "Beijing", "date": "2025-08-01"}']]),
    82: (BROKEN, None, None, [["get_weather", '{"city": "Tokyo"']]),
    92: (PROSE, "some prefix text some suffix text", None, [["foo", '{"x":1}'], ["bar", '{"y":2}']]),
    107: (PROSE, "extra trailing data", None,
          [["get_current_weather", '{"city": "Dallas", "state": "TX", "unit": "fahrenheit"}']]),
    139: (("sample artifact: upstream asserts two reasoning events that the sample joins without a separator; "
           "we join analysis messages with a newline"), "Unable to fetch weather data",
          "Need to get weather\nTool not responding", [["get_weather", '{"city":"Boston"}']] * 3),
    145: (PROSE, "Let me check the weather for you.\n\nI'll get that information.", None,
          [["get_weather", '{"city": "Tokyo"}']]),
    146: (BROKEN, None, None, [["func", "{"]]),
    147: (BROKEN + " (a bare object where the format writes a list)", None, None, [["func", "{}"]]),
    155: (PROSE, "Let me check the weather for you.\n\nWould you like to know more?", None,
          [["get_weather", '{"city": "Tokyo"}']]),
    174: (PROSE, "Thank you!", None, [["get_weather", '{"city": "Seattle"}']]),
    194: (UNTERMINATED, "[Pasted ~4 lines]", None, [["context_info", '{"metadata_only": false}']]),
    198: (PROSE + " (final-channel text after a call; SGLang discards it)", "This text should be truncated.",
          "Reasoning...", [["read_file", '{\n  "files": []\n}']]),
}

# line -> every error we report on that sample, exactly; every other sample parses without an error.
ERRORS: dict[int, list[str]] = {
    2: ["tool call block 1: no </tool_call> (an unterminated block); call kept"],
    3: ["tool call block 1: the call object is not valid JSON; arguments kept as raw text",
        "tool call block 1: no </tool_call> (an unterminated block); call kept"],
    22: ["call 'invalidTool': arguments are not valid JSON; kept as raw text"],
    29: ["call 'get_weather': arguments are not valid JSON; kept as raw text"],
    56: ["call 'get_weather': no </tool_call> (an unterminated block); call kept"],
    70: ["call 1 (bad): arguments are not a JSON object; kept as raw text"],
    71: ["call 1: id 'functions.invalid.0' is not functions.NAME:IDX; call skipped"],
    74: ["tool call markup outside a <|tool_calls_section_begin|> section"],
    82: ["arguments of get_weather are not a JSON object"],
    83: ["tool call section without <｜tool▁call▁begin｜>"],
    108: ["no tool call after [TOOL_CALLS]"],
    112: ["arguments of bash are not valid JSON"],
    124: ["tool call without a function: '<function=bad_func_no_gt\\n</function>'"],
    146: ["unclosed tool call"],
    147: ["a bare call object instead of a list after '<|tool_call|>'"],
    194: ["unclosed <minimax:tool_call> block"],
}

# Call blocks whose closing marker a finished reply must write (gpt-oss's <|call|> is a stop token that
# engines drop, and JSON-list formats close with the list itself, so they are not here).
BLOCKS: dict[str, tuple[tuple[str, str], ...]] = {
    "hermes": (("<tool_call>", "</tool_call>"),),
    "granite4": (("<tool_call>", "</tool_call>"),),
    "glm45": (("<tool_call>", "</tool_call>"),),
    "qwen3_coder": (("<tool_call>", "</tool_call>"), ("<function=", "</function>")),
    "seed_oss": (("<seed:tool_call>", "</seed:tool_call>"),),
    "minimax_m2": (("<minimax:tool_call>", "</minimax:tool_call>"),),
    "hunyuan": (("<tool_calls>", "</tool_calls>"),),
    "kimi_k2": (("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
                ("<|tool_call_begin|>", "<|tool_call_end|>")),
    **{name: (("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"), ("<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"))
       for name in ("deepseek_v3", "deepseek_r1", "deepseek_v31")},
}
_THINK = re.compile(r"^\s*<(seed:)?think>(.*?)</(seed:)?think>", re.DOTALL)


def _norm(text: str | None) -> str:
    return (text or "").strip()


def _expected(sample: dict[str, Any]) -> tuple[str, str, list[dict[str, Any]]]:
    exp = sample["expected"]
    content, reasoning = exp.get("content"), exp.get("reasoning")
    match = _THINK.match(content or "")
    if reasoning is None and match:  # a tool-parser-only upstream test: the block is reasoning in a pipeline
        reasoning, content = match.group(2), (content or "")[match.end() :]
    return _norm(content), _norm(reasoning), exp.get("tool_calls") or []


def _arguments(text: str, want: Any) -> Any:
    if isinstance(want, str):
        return text.strip()
    try:
        return json.loads(text)
    except ValueError:
        return text


def _mismatch(sample: dict[str, Any], got: ParseResult) -> list[str]:
    content, reasoning, calls = _expected(sample)
    problems = []
    if _norm(got.content) != content:
        problems.append(f"content {got.content!r} != {content!r}")
    if _norm(got.reasoning) != reasoning:
        problems.append(f"reasoning {got.reasoning!r} != {reasoning!r}")
    got_calls = [
        {"name": c.name, "arguments": _arguments(c.arguments, w.get("arguments"))}
        for c, w in zip(got.tool_calls, calls + [{}] * len(got.tool_calls))
    ]
    want_calls = [{"name": w["name"], "arguments": w.get("arguments", {})} for w in calls]
    if got_calls != want_calls:
        problems.append(f"calls {got_calls} != {want_calls}")
    for c, w in zip(got.tool_calls, calls):
        if "id" in w and c.id != w["id"]:
            problems.append(f"id {c.id!r} != {w['id']!r}")
    return problems


def _parse(line: int) -> tuple[str, ParseResult]:
    sample = SAMPLES[line - 1]
    name = select_parser(sample["model"])
    return name, get_parser(name, **OPTIONS.get(line, {})).parse(sample["raw"], tools=sample.get("tools"))


LINES = range(1, len(SAMPLES) + 1)
IDS = [f"L{n}-{s['family']}" for n, s in enumerate(SAMPLES, start=1)]


@pytest.mark.parametrize("line", LINES, ids=IDS)
def test_sample(line: int) -> None:
    sample = SAMPLES[line - 1]
    name, got = _parse(line)
    problems = _mismatch(sample, got)
    if line in OURS:
        policy, content, reasoning, calls = OURS[line]
        assert problems, f"L{line} is declared as a policy difference but matches upstream: remove it from OURS"
        assert (got.content, got.reasoning, [[c.name, c.arguments] for c in got.tool_calls]) == (
            content, reasoning, calls), f"L{line} [{name}] ({policy})"
    else:
        assert not problems, f"L{line} [{name}] {sample['family']} {sample['test']}: " + "; ".join(problems)
    assert got.errors == ERRORS.get(line, []), f"L{line} [{name}]"


def test_calls_from_unterminated_blocks_carry_an_error() -> None:
    unterminated = {}
    for line in LINES:
        raw = SAMPLES[line - 1]["raw"]
        name, got = _parse(line)
        if got.tool_calls and any(raw.count(o) > raw.count(c) for o, c in BLOCKS.get(name, ())):
            unterminated[line] = bool(got.errors)
    assert unterminated == {2: True, 3: True, 56: True, 194: True}


def test_every_family_selects_a_parser() -> None:
    families = {s["family"]: select_parser(s["model"]) for s in SAMPLES}
    assert all(families.values()), families
