"""Every collected output of the second-half-2026 families Muse (Spark, Glimmer), K2 Horizon, Inkling,
Command 4, DeepSeek V4 / V4.1 and the metadata-driven `response_template` parser
(tests/fixtures/parsers/2026h2/fam_a_samples.jsonl: each row with its line in the collection
`output_samples_2026h2.jsonl` and its source, a vLLM or SGLang test or a regression report) through the parser
auto-selected for its model.

Exact comparison of what the source asserts: the calls (name; arguments as JSON unless the source leaves them
unasserted; ids where given), the content and the reasoning when the source states them (null == ""). The
request options a source set (`chat_template_kwargs`) reach the parser as a run passes them: the parser's
`template_options` (K2 Horizon's `tool_call_format`, `reasoning_effort`) and DeepSeek's `thinking` (its renderer
then pre-fills `<think>`). The `hf` rows carry the checkpoint metadata they were read with; a run passes the
checkpoint's own (run/setup/parser_choice.py), so they are read by `response_template` with it. Where
wtb_local decides differently from the sample's source, the sample is in OURS with the policy
(docs/parser-policies.md, "Second-half 2026 families") and wtb_local's exact result. Every sample's errors are exact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.parsers.samples import Ours, check, load, tally
from wtb_local.contract.schema import ParseResult
from wtb_local.formats.parsers import get_parser, parser_class, select_parser

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "parsers" / "2026h2" / "fam_a_samples.jsonl"
SAMPLES = load(FIXTURE)

# The parser each family's samples are read with (selected by the model id; `hf` rows by their metadata).
PARSER = {"muse": "muse_glimmer", "muse_glimmer": "muse_glimmer", "k2_horizon": "k2_horizon", "inkling": "inkling",
          "cohere_command4": "cohere_command", "deepseek_v41": "deepseek_v41", "deepseek_v4": "deepseek_v4",
          "hf": "response_template"}


def options(sample: dict[str, Any]) -> dict[str, Any]:
    """The parser options a run would pass for the sample's request."""
    if sample["family"] == "hf":
        return {"response_template": sample["response_template"]}
    kwargs = sample.get("chat_template_kwargs") or {}
    name = select_parser(sample["model"])
    found = {k: kwargs[k] for k in getattr(parser_class(name), "template_options", ()) if k in kwargs}
    if kwargs.get("thinking") is True:
        found["thinking"] = True
    return found


def _parse(line: int) -> tuple[str, ParseResult]:
    sample = SAMPLES[line]
    name = "response_template" if sample["family"] == "hf" else select_parser(sample["model"])
    parser = get_parser(name, **options(sample))
    return name, parser.parse(sample["text"], tools=sample.get("tools"), finish_reason="stop")


SPLIT = ("the reasoning block is split off first, as vLLM's reasoning parser does (the source ran SGLang's tool "
         "detector alone, which returns the reasoning as text)")
SPLIT_UNREAD = SPLIT + "; a call cut off at a normal stop stays in the content with an error"
FORM = ("without a `tool_call_format` the form is read from each call, as SGLang does (vLLM defaults to xml and "
        "fails closed on a JSON call)")
TOOL_TEXT = ("a free-text tool block is visible text, as vLLM reads it (SGLang makes it a call with an empty "
             "name, which no tool answers)")
NO_ARGS = "a call payload without arguments, inside explicit call markup, is a call with {} (SGLang returns none)"
UNREAD = "an unreadable call block is an error and stays in the content as written (the source drops it)"
UNTERMINATED = ("a complete call whose closing marker never came at a normal stop is kept with an error (vLLM's "
                "metadata reader drops it)")

_HYPOTHETICAL = ("Consider <ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key><ifm|arg_value>Boston"
                 "</ifm|arg_value></ifm|tool_call> as hypothetical text.")
_GEMMA_UNREAD = "a tool_calls region that cannot be read (not JSON: {}): not read as a call"

# line -> (policy, wtb_local's exact content, reasoning, [[name, arguments text], ...])
OURS: Ours = {
    11: (SPLIT, None, "Need weather.", [["get_weather", '{"city": "Paris"}']]),
    17: (SPLIT_UNREAD, ('<atem:function_calls>\n<atem:invoke name="get_weather.get_weather">\n'
                        '<atem:parameter name="city">Par'), "Need weather.", []),
    24: (FORM, None, None, [["ping", "{}"]]),
    36: (SPLIT, "The answer is 42.", _HYPOTHETICAL, []),
    37: (SPLIT, None, _HYPOTHETICAL, [["get_weather", '{"city": "Tokyo"}']]),
    53: (TOOL_TEXT, "raw body", None, [["weather", '{"city":"SF"}']]),
    54: (NO_ARGS, None, None, [["weather", "{}"]]),
    92: (UNREAD, "prefix <|START_ACTION|>[not valid json<|END_ACTION|>", None, []),
    119: (UNREAD, '<|tool_call>call:get_weather{city:<|"|>London', None, []),
    121: (UNREAD, '<|tool_call>call:get-weather{city:<|"|>London<|"|>}<tool_call|>', None, []),
    122: (UNREAD, '<|tool_call>call:set_alarm{hour:7,label:<|"|>morning<|"|>}unexpected<tool_call|>', None, []),
    123: (UNTERMINATED, None, None, [["set_alarm", '{"hour": 7, "label": "morning"}']]),
}

# line -> every error wtb_local reports on that sample, exactly; every other sample parses without an error.
ERRORS: dict[int, list[str]] = {
    17: ["<atem:invoke name='get_weather.get_weather'> without </atem:invoke>: not read as a call"],
    25: ["a call in the xml form where the template asked for json: not read as a call"],
    26: ["<ifm|tool_call> without </ifm|tool_call>: not read as a call"],
    27: ["<ifm|tool_calls> block without a <ifm|tool_call>: 'junk'"],
    38: ["call 'get_weather': unreadable argument tags '<ifm|arg_key>city</ifm|arg_key>'; not read as a call"],
    39: ["call 'get_weather': unreadable argument tags '<ifm|arg_key>city</ifm|arg_key>'; not read as a call"],
    49: ["the call to d is not valid JSON; arguments kept as raw text"],
    71: ["invoke outside a <｜DSML｜tool_calls> block; call(s) kept"],
    72: ["invoke outside a <｜DSML｜tool_calls> block; call(s) kept"],
    91: ["a call object is never closed; call kept", "no <|END_ACTION|> (an unterminated action); calls kept"],
    92: ["unexpected 'n' in the call list"],
    119: [_GEMMA_UNREAD.format(repr('{city:<|"|>London'))],
    121: [_GEMMA_UNREAD.format(repr('-weather{city:<|"|>London<|"|>}'))],
    122: [_GEMMA_UNREAD.format(repr('{hour:7,label:<|"|>morning<|"|>}unexpected'))],
    123: ["no <tool_call|> (an unterminated tool_calls region); calls kept"],
}


@pytest.mark.parametrize("line", sorted(SAMPLES), ids=[f"L{n}-{SAMPLES[n]['family']}" for n in sorted(SAMPLES)])
def test_sample(line: int) -> None:
    sample = SAMPLES[line]
    name, got = _parse(line)
    assert name == PARSER[sample["family"]]
    check(line, sample, name, got, ours=OURS, errors=ERRORS)


def test_counts() -> None:
    """The tally the docs give: samples that match their source exactly, and explained policy differences."""
    assert (len(SAMPLES), len(SAMPLES) - len(OURS), len(OURS)) == (78, 66, 12)
    assert {policy for policy, *_ in OURS.values()} == {SPLIT, SPLIT_UNREAD, FORM, TOOL_TEXT, NO_ARGS, UNREAD,
                                                       UNTERMINATED}
    assert {row["family"] for row in SAMPLES.values()} == set(PARSER)


def test_per_family_tally() -> None:
    """Per family, samples read exactly as their source asserts (docs/parsers-and-templates.md, second-half 2026)."""
    assert tally(SAMPLES, OURS) == {"muse_glimmer": [10, 10], "muse": [9, 11], "k2_horizon": [16, 19], "inkling": [15, 17],
                     "deepseek_v41": [5, 5], "deepseek_v4": [2, 2], "cohere_command4": [6, 7], "hf": [3, 7]}
