"""Every real output of the second-half 2026 families this repository reads with group B's parsers (Hy4, Ling 3,
PLaMo 3, MiMo, dots, Granite 4.2, ZAYA1, Ripple, Step-5, Beam, Trinity, Spark 2.5, IQuest-Q1, Intern-S1,
GigaChat 3.5) and the regression samples of GLM-4.7 and Gemma 4 (tests/fixtures/parsers/2026h2/fam_b_samples.jsonl,
each row with its line in the collection `output_samples_2026h2.jsonl` and its source), through the parser
auto-selected for its model id, or the family's own parser where no source names a checkpoint.

Exact comparison of what the source asserts: the calls (name; arguments as JSON unless the source leaves
them unasserted), the content and the reasoning when the source states them (null == "", stripped). A row's
`chat_template_kwargs.enable_thinking` is the run's thinking switch (`thinking` option). Where wtb_local
decides differently from the sample's source, the sample is in OURS with the policy
(docs/parser-policies.md, "Second-half 2026 families") and wtb_local's exact result. Every sample's errors
are exact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.parsers.samples import Ours, check, load, tally
from wtb_local.contract.schema import ParseResult
from wtb_local.formats.parsers import get_parser, select_parser

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "parsers" / "2026h2" / "fam_b_samples.jsonl"
SAMPLES = load(FIXTURE)

# family -> the parser its model id selects (the family's name where the sources name no checkpoint)
PARSER = {"hy_v4": "hy_v4", "ling3": "ling3", "plamo3": "plamo3", "mimo": "mimo", "dots": "dots",
          "granite_toolcall_parser": "granite42", "zaya": "zaya", "ripple": "ripple", "step5": "step5",
          "beam": "beam", "trinity": "trinity", "spark25": "spark25", "iquest_q1": "iquest_q1",
          "interns1": "internlm", "gigachat35": "gigachat35", "glm47": "glm47", "gemma4": "gemma4"}


def options(sample: dict[str, Any]) -> dict[str, Any]:
    kwargs = sample.get("chat_template_kwargs") or {}
    return {"thinking": bool(kwargs["enable_thinking"])} if "enable_thinking" in kwargs else {}


def tools_of(sample: dict[str, Any]) -> list[dict[str, Any]] | None:
    return [{"type": "function", "function": tool} for tool in sample.get("tools") or []] or None


def parser_name(sample: dict[str, Any]) -> str:
    return select_parser(sample["model"]) if sample["model"] else sample["family"]


REASONING = ("a reasoning block is reasoning and a call written inside it is counted, not executed "
             "(SGLang's detector has no reasoning parser: it keeps the block's text as content and reads the call)")
UNKNOWN = "a call to a tool the request did not offer is kept; the evaluator judges it (upstream drops it)"
CUT_NAME = "a request cut before its name was closed is no call (vLLM returns one named by the fragment)"
THINK_OFF = ("a thinking block the model writes is split off even when the prompt switched thinking off "
             "(vLLM leaves the markers in the content)")
END_TOKEN = "an end-of-turn token at the end of a reply is stripped (SGLang's detector leaves it in the text)"

# line -> (policy, wtb_local's exact content, reasoning, [[name, arguments text], ...])
OURS: Ours = {
    95: (THINK_OFF, 'Answer.', 'Reasoning.', []),
    99: (CUT_NAME, '<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>clo', None, [['weather', '{"city":"東京"}']]),
    111: (UNKNOWN, None, None, [['unknown_fn', '{"x": "1"}']]),
    114: (UNKNOWN, None, None, [['ghost', '{"query": "chairs"}']]),
    128: (REASONING, 'hello', 'reasoning', []),
    130: (REASONING, None, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', []),
    136: (END_TOKEN, '查询中。', None, [['get_weather', '{"city": "北京"}']]),
}

# line -> every error wtb_local reports on that sample, exactly; every other sample parses without an error.
ERRORS: dict[int, list[str]] = {
    83: ["a malformed <tool_call> (no matching </tool_call>): '<tool_call:opensource>get_weather<arg_key:opensource>city</a'; kept as text"],
    84: ["a <tool_call> that does not follow the grammar: '<tool_call:opensource>get_weather<arg_key:opensource>city</a'; kept as text"],
    85: ['tool-call markup outside a <tool_calls> block (a stray or misplaced tag); kept as text', 'a <tool_calls> block without a call; kept as text'],
    96: ["call 'weather': no <|plamo:end_tool_request:plamo|> (an unterminated request); call kept", 'no <|plamo:end_tool_requests:plamo|> (an unterminated block); calls kept'],
    99: ["a tool request without a complete name: '<|plamo:begin_tool_name:plamo|>clo'; kept as text", 'no <|plamo:end_tool_requests:plamo|> (an unterminated block); calls kept'],
    112: ["tool call without a function: 'no function here'"],
    126: ['tool call block without a function name'],
    133: ["call 'run': unbalanced <arg_key>/<arg_value> tags; the block is kept as text"],
}  # fmt: skip


def parse(line: int) -> tuple[str, ParseResult]:
    sample = SAMPLES[line]
    name = parser_name(sample)
    return name, get_parser(name, **options(sample)).parse(sample["text"], tools=tools_of(sample),
                                                             finish_reason="stop")


@pytest.mark.parametrize("line", sorted(SAMPLES), ids=[f"L{n}-{SAMPLES[n]['family']}" for n in sorted(SAMPLES)])
def test_sample(line: int) -> None:
    sample = SAMPLES[line]
    name, got = parse(line)
    assert name == PARSER[sample["family"]]
    check(line, sample, name, got, ours=OURS, errors=ERRORS)


def test_counts() -> None:
    """The tally the docs give, per family: (samples that match their source exactly, samples)."""
    assert tally(SAMPLES, OURS) == {
        "beam": [1, 1], "dots": [4, 5], "gemma4": [1, 1], "gigachat35": [6, 6], "glm47": [1, 1],
        "granite_toolcall_parser": [1, 1], "hy_v4": [14, 14], "interns1": [4, 4], "iquest_q1": [5, 6],
        "ling3": [8, 8], "mimo": [9, 10], "plamo3": [7, 9], "ripple": [1, 1], "spark25": [3, 3], "step5": [1, 1],
        "trinity": [1, 3], "zaya": [1, 1]}
    assert (len(SAMPLES), len(OURS)) == (75, 7)
    assert {policy for policy, *_ in OURS.values()} == {REASONING, UNKNOWN, CUT_NAME, THINK_OFF, END_TOKEN}
    assert set(PARSER) == {row["family"] for row in SAMPLES.values()}
