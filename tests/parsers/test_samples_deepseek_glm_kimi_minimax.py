"""Every real output of the 2026 families DeepSeek-V3.2/V4, Kimi-K3, GLM-4.7, MiniMax-M3, Hy3, Laguna, LongCat,
Cohere Command and GigaChat3 (tests/fixtures/parsers/2026/fam_a_samples.jsonl, each row with its line in the
collection `output_samples_2026.jsonl` and its source) through the parser auto-selected for its model.

Exact comparison of what the source asserts: the calls (name; arguments as JSON unless the source leaves
them unasserted), the content and the reasoning when the source states them (null == ""), and ids where
given. Samples whose upstream test ran after a generation prompt that pre-fills the reasoning opener are read
with `thinking=True` (OPTIONS); a llama.cpp "partial" output is read as cut at the token limit. Where
wtb_local decides differently from the sample's source, the sample is in OURS with the policy
(docs/parser-policies.md, "2026 families") and wtb_local's exact result. Every sample's errors are exact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.parsers.samples import Ours, check, load
from wtb_local.contract.schema import ParseResult
from wtb_local.formats.parsers import get_parser, select_parser

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "parsers" / "2026" / "fam_a_samples.jsonl"
SAMPLES = load(FIXTURE)

# The parser each family's model id selects.
PARSER = {"deepseek_v32": "deepseek_v32", "deepseek_v4": "deepseek_v4", "kimi_k3": "kimi_k3", "glm47": "glm47",
          "minimax_m3": "minimax_m3", "hy_v3": "hy_v3", "poolside_v1": "poolside_v1", "longcat": "longcat",
          "cohere_command": "cohere_command", "gigachat3": "gigachat3"}


def _prefilled(sample: dict[str, Any]) -> bool:
    """Whether the sample's text follows a generation prompt that opened the reasoning block: llama.cpp ran
    it with enable_thinking, or with the template's default, which thinks (Kimi-K3 opens its think channel,
    Cohere pre-fills <|START_THINKING|>)."""
    options = sample.get("llamacpp_options")
    if options is None:
        return False
    if "enable_thinking" in options:
        return options["enable_thinking"] == "true"
    return sample["family"] in ("kimi_k3", "cohere_command")


def _finish(sample: dict[str, Any]) -> str:
    return "length" if (sample.get("llamacpp_options") or {}).get("is_partial") == "true" else "stop"


CONTINUATION = ("a llama.cpp continue_final_message sample: its text continues a pre-filled assistant message; "
                "wtb_local never continues one, so the text is read as a whole reply")
NO_RETYPE = "a DSML value is typed by its string= marker, never retyped by the schema (vLLM retypes it)"
NO_UNWRAP = "a lone `arguments` parameter is kept as written (vLLM unwraps it when the tool has no such parameter)"
BROKEN = "a broken call is kept with its raw arguments and an error (upstream returns no call)"
TRUNCATED = "a call cut at the token limit is an error, never a half-written call (llama.cpp returns it partial)"
UNDECLARED = "calls are read whether or not the request declared tools (SGLang strips them when none are declared)"
STRUCTURE = "child tags are an object even where the schema also allows a string (llama.cpp keeps the markup as text)"
UNREADABLE = ("an unreadable call block stays whole in the content with an error (the sample is a streaming "
              "result that lost the block's opener)")

# line -> (policy, wtb_local's exact content, reasoning, [[name, arguments text], ...])
OURS: Ours = {
    6: (NO_UNWRAP, None, None, [["get_weather", '{"arguments": {"location": "Beijing"}}']]),
    8: (NO_RETYPE, None, None, [["echo", '{"text": null}']]),
    41: (UNDECLARED, None, None, [["read_agent", '{"id": "worker_1"}']]),
    45: (UNREADABLE, "]<]minimax[>[<tool_call>\n]<]minimax[>[</user_id> after error", None, []),
    89: (BROKEN, None, None, [["func", "{"]]),
    90: (BROKEN, None, None, [["func", "not a dict"]]),
    142: (TRUNCATED, None, "I'm\nthinking", []),
    176: (CONTINUATION, None, "world!\nWhat's up?", []),
    177: (CONTINUATION, "Hello, world!\nWhat's up?", "thinking", []),
    185: (CONTINUATION, None, "world!\nWhat's up?", []),
    186: (CONTINUATION, "Hello, world!\nWhat's up?", "thinking", []),
    193: (CONTINUATION, None, "world!\nWhat's up?", []),
    194: (CONTINUATION, "Hello, world!\nWhat's up?", "thinking", []),
    220: (STRUCTURE, None, "Union string", [["union_args", '{"label": {"text": "hi"}}']]),
    222: (CONTINUATION, None, "world!\nWhat's up?", []),
    235: (CONTINUATION, "world!\nWhat's up?", None, []),
}

# line -> every error wtb_local reports on that sample, exactly; every other sample parses without an error.
ERRORS: dict[int, list[str]] = {
    11: [("a <｜DSML｜function_calls> block (DeepSeek-V3.2's) where this family writes <｜DSML｜tool_calls>: "
          "not read as calls")],
    39: ["no <|close|>tools<|sep|> (an unterminated tools channel); calls kept"],
    45: ["tool call block without an invoke: ']<]minimax[>[</user_id> after error'"],
    89: ["tool call block 1: the call object is not valid JSON; arguments kept as raw text",
         "tool call block 1: no </longcat_tool_call> (an unterminated block); call kept"],
    90: ["arguments of func are not a JSON object; kept as raw text"],
    91: ["tool call block 1: not a JSON call object"],
    100: ["tool call block without a function name"],
    101: ["tool call block without a function name"],
    142: ["truncated tool call"],
}


def _parse(line: int) -> tuple[str, ParseResult]:
    sample = SAMPLES[line]
    name = select_parser(sample["model"])
    tools = [{"type": "function", "function": tool} for tool in sample.get("tools") or []] or None
    parser = get_parser(name, **({"thinking": True} if _prefilled(sample) else {}))
    return name, parser.parse(sample["text"], tools=tools, finish_reason=_finish(sample))


@pytest.mark.parametrize("line", sorted(SAMPLES), ids=[f"L{n}-{SAMPLES[n]['family']}" for n in sorted(SAMPLES)])
def test_sample(line: int) -> None:
    sample = SAMPLES[line]
    name, got = _parse(line)
    assert name == PARSER[sample["family"]]
    check(line, sample, name, got, ours=OURS, errors=ERRORS)


def test_counts() -> None:
    """The tally the docs give: samples that match their source exactly, and explained policy differences."""
    assert (len(SAMPLES), len(SAMPLES) - len(OURS), len(OURS)) == (113, 97, 16)
    assert {policy for policy, *_ in OURS.values()} == {CONTINUATION, NO_RETYPE, NO_UNWRAP, BROKEN, TRUNCATED,
                                                       UNDECLARED, STRUCTURE, UNREADABLE}
    assert {row["family"] for row in SAMPLES.values()} == set(PARSER)
