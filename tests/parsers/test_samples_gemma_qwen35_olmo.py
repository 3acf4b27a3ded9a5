"""Every 2026 sample of the Gemma 4, FunctionGemma, Olmo 3, Apertus, Qwen3.5/3.6 and Nemotron 3 (qwen3_coder,
qwen3_xml), ERNIE 4.5, Granite 4, Step-3.5, LFM2 and MiniCPM5 families, through wtb_local's parser.

The fixture copies these families' lines of a set of 242 real outputs of the 2026 families (`line` is
the line number there), each with the calls, content and reasoning its source (a vLLM tool-parser test or
llama.cpp's test-chat.cpp) asserts. A sample is parsed with the parser named by its `family` (vLLM's
parser name, which is a registry name here) and the options its prompt implies (OPTIONS); what the source
asserts must come back exactly (content null == "", whitespace stripped, arguments as parsed JSON, names
only where the source asserts only names). What a source does not assert is pinned to wtb_local's result
(UNASSERTED_*), so every field of every sample is exact. Where wtb_local's policy differs from the source,
the sample is in OURS with the policy (docs/parser-policies.md, "2026 families") and our exact result.
Every sample's errors are asserted exactly (ERRORS).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wtb_local.contract.schema import ParseResult
from wtb_local.formats.parsers import get_parser, select_parser

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "parsers" / "2026" / "gemma-qwen35-olmo.jsonl"
SAMPLES = {s["line"]: s for s in map(json.loads, FIXTURE.read_text(encoding="utf-8").splitlines())}

# The prompt's reasoning pre-fill per sample. thinking=True: the generation prompt ends inside an opened
# block (Qwen3.5, Nemotron 3, Step-3.5 and MiniCPM5 with thinking on; a continued reasoning prefill);
# thinking=False: a continued content prefill (the reasoning block is closed in the prompt). Gemma 4 and
# LFM2.5 never pre-fill an open block; the others are read from their own text.
_PREFILLED = [116, 122, 123, 126, 127, 128, 129, 130, 131, 132, 133, 136, 138, 160, 204, 223, 224, 225, 226, 227,
              228, 229, 231, 241, 242]
_CONTINUED_CONTENT = [159, 162, 203, 206, 230]
OPTIONS: dict[int, dict[str, Any]] = {**{n: {"thinking": True} for n in _PREFILLED if n != 131},
                                      **{n: {"thinking": False} for n in [*_CONTINUED_CONTENT, 131]}}

# The parser each sample's model id selects (the `family` names the parser its source ran).
SELECTED = {"google/gemma-4-31B-it": "gemma4", "google/functiongemma-270m-it": "functiongemma",
            "allenai/Olmo-3-7B-Instruct": "olmo3", "swiss-ai/Apertus-8B-Instruct-2509": "apertus",
            "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8": "qwen3_coder", "Qwen/Qwen3.5-4B": "qwen3_coder",
            "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": "qwen3_coder",
            "baidu/ERNIE-4.5-21B-A3B-Thinking": "ernie45", "ibm-granite/granite-4.0 family": "granite4",
            "stepfun-ai/Step-3.5-Flash": "step3p5", "openbmb/MiniCPM5-1B": "minicpm5",
            "LiquidAI/LFM2.5-8B-A1B": "lfm2",
            "LiquidAI/LFM2 / LFM2.5 family (shared test_lfm2_parser, run against several LFM2 templates)": "lfm2"}

# Policies (docs/parser-policies.md, "2026 families").
CONTINUED = ("continued prefill: the source continues an assistant message whose first words are in the "
             "prompt; wtb_local never continues one and parses the completion alone")
BROKEN = "a broken call is kept with its raw arguments and an error (the source returns no call)"
TRUNCATED = "a call cut off at the token limit is an error, never a half-written call (the source streams it)"
REASONING_FIRST = ("the reasoning block is split off before calls are read, as vLLM's reasoning parser does "
                   "(the source ran the tool parser alone)")
REOPENED = ("a completion that repeats the pre-filled opening tag opens the block; the tag is markup, not "
            "reasoning text")

# line -> (policy, our exact content, reasoning, [[name, arguments text], ...]) where we differ from the
# source. Asserted exactly; an entry whose sample matches the source fails (remove it).
OURS: dict[int, tuple[str, str | None, str | None, list[list[str]]]] = {
    59: (BROKEN, None, None, [["foo", "x=1]"]]),
    81: (REASONING_FIRST, None, "I need to call two tools to handle these two issues separately.",
         [["get_current_temperature", '{"location": "Beijing"}'],
          ["get_temperature_unit", '{"location": "Guangzhou", "unit": "c"}']]),
    114: (TRUNCATED, None, None, []),
    126: (REOPENED, None, None, [["special_function", '{"arg1": 1}']]),
    131: (CONTINUED, "world!\nWhat's up?", None, []),
    138: (CONTINUED, "Hello, world!\nWhat's up?", "thinking", []),
    159: (CONTINUED, "world!\nWhat's up?", None, []),
    160: (CONTINUED, "Hello, world!\nWhat's up?", "thinking", []),
    162: (CONTINUED, "world!\nWhat's up?", None, []),
    203: (CONTINUED, "world!\nWhat's up?", None, []),
    204: (CONTINUED, "Hello, world!\nWhat's up?", "thinking", []),
    206: (CONTINUED, "world!\nWhat's up?", None, []),
    230: (CONTINUED, "world!\nWhat's up?", None, []),
    231: (CONTINUED, "Hello, world!\nWhat's up?", "thinking", []),
    242: (CONTINUED, "Hello, world!\nWhat's up?", "thinking", []),
}
# The partial-output sample is a reply cut at the token limit.
FINISH = {114: "length"}

# Where the source asserts no content or no reasoning, ours is pinned (default: None).
UNASSERTED_CONTENT = {34: "Just some reasoning text with no call in it."}
UNASSERTED_REASONING = {32: "I need to read the entry source file to inspect the crash point.",
                        35: "Listing directory files."}

# line -> every error we report, exactly; every other sample parses without an error.
ERRORS: dict[int, list[str]] = {
    30: ["call gdb: no <tool_call|> after the call (an unterminated block); call kept"],
    59: ["call foo: not a valid call (not a Python call list (SyntaxError)); arguments kept as raw text"],
    114: ["truncated tool call: call list cut off at the token limit"],
}


def _norm(text: str | None) -> str:
    return (text or "").strip()


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _parse(line: int) -> ParseResult:
    sample = SAMPLES[line]
    parser = get_parser(sample["family"], **OPTIONS.get(line, {}))
    return parser.parse(sample["text"], tools=sample.get("tools"), finish_reason=FINISH.get(line, "stop"))


def _mismatch(line: int, got: ParseResult) -> list[str]:
    sample = SAMPLES[line]
    problems = []
    content = sample["expected_content"] if "expected_content" in sample else UNASSERTED_CONTENT.get(line)
    reasoning = sample["expected_reasoning"] if "expected_reasoning" in sample else UNASSERTED_REASONING.get(line)
    if _norm(got.content) != _norm(content):
        problems.append(f"content {got.content!r} != {content!r}")
    if _norm(got.reasoning) != _norm(reasoning):
        problems.append(f"reasoning {got.reasoning!r} != {reasoning!r}")
    want = sample["expected_calls"]
    if [c.name for c in got.tool_calls] != [w["name"] for w in want]:
        problems.append(f"calls {[c.name for c in got.tool_calls]} != {[w['name'] for w in want]}")
    else:
        for c, w in zip(got.tool_calls, want, strict=True):
            if "arguments" in w and _arguments(c.arguments) != w["arguments"]:
                problems.append(f"{c.name} arguments {c.arguments} != {w['arguments']}")
            if "arguments_raw" in w and c.arguments != w["arguments_raw"]:
                problems.append(f"{c.name} raw arguments {c.arguments!r} != {w['arguments_raw']!r}")
    return problems


@pytest.mark.parametrize("line", sorted(SAMPLES), ids=[f"L{n}-{SAMPLES[n]['family']}" for n in sorted(SAMPLES)])
def test_sample(line: int) -> None:
    got = _parse(line)
    problems = _mismatch(line, got)
    if line in OURS:
        policy, content, reasoning, calls = OURS[line]
        assert problems, f"L{line} is declared as a policy difference but matches its source: remove it from OURS"
        assert (got.content, got.reasoning, [[c.name, c.arguments] for c in got.tool_calls]) == (
            content, reasoning, calls), f"L{line} ({policy})"
    else:
        assert not problems, f"L{line} {SAMPLES[line]['source']['test']}: " + "; ".join(problems)
    assert got.errors == ERRORS.get(line, []), f"L{line}"


def test_every_model_id_selects_its_family_parser() -> None:
    selected = {s["model"]: select_parser(s["model"]) for s in SAMPLES.values()}
    assert selected == SELECTED
    # the qwen3_xml samples are Qwen3-Coder outputs run through vLLM's second reader of the format: its
    # id selects qwen3_coder, which reads them the same way (test_sample runs both)
    families = {(s["model"], s["family"]) for s in SAMPLES.values() if s["family"] != SELECTED[s["model"]]}
    assert families == {("Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", "qwen3_xml")}


def test_counts() -> None:
    """What the report counts: samples passing exactly and explained policy differences."""
    assert len(SAMPLES) == 129
    assert (len(SAMPLES) - len(OURS), len(OURS)) == (114, 15)
    by_policy: dict[str, int] = {}
    for policy, *_ in OURS.values():
        by_policy[policy] = by_policy.get(policy, 0) + 1
    assert by_policy == {CONTINUED: 11, BROKEN: 1, TRUNCATED: 1, REASONING_FIRST: 1, REOPENED: 1}
