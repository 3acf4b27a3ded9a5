"""Our parsers against SGLang 0.5.23's own function-call parsers (`sglang:NAME`, through the bridge to SGLang's
venv: formats/parsers/sglang_native.py) on the real model outputs the vLLM parity test reads
(tests/helpers/sglang_parity.py). Marker `sglang`: it needs SGLang's venv (WTB_SGLANG_PYTHON, or SGLang
importable here); without it the module skips, under CI=true it fails. Every difference is listed: named with
its cause (`policy:` ours, `SGLang:` SGLang's own rule, `adapter:` what `sglang:NAME` does not do), or listed
as not yet examined (`UNEXAMINED`, counted so in docs/parser-policies.md §4). The test fails on a difference
listed nowhere and on a listed one that is gone, so SGLang's next release shows what it changed."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.sglang

from tests.helpers import sglang_parity

DOCS = Path(__file__).resolve().parents[2] / "docs" / "parser-policies.md"
PP, PT = "docs/parser-policies.md", "docs/parsers-and-templates.md"
SG = "sglang/srt/function_call"

BROKEN = (f"policy: a broken or cut call is kept with its raw arguments and an error ({PT}, Parser policies: broken "
          "calls kept with an error); SGLang drops it")
UNREADABLE = (f"policy: a reply whose only call block cannot be read is a parse error on the step ({PT}, What every "
              "parser shares); SGLang returns it as content, no error")
QWEN25_NEWLINES = (f"SGLang: its qwen25 detector ({SG}/qwen25_detector.py) reads a call only between `<tool_call>\\n` "
                   "and `\\n</tool_call>`: a block written without those newlines is content")
MISTRAL_FORMS = (f"SGLang: its mistral detector ({SG}/mistral_detector.py) reads the JSON list only after "
                 "`[TOOL_CALLS] [` (with the space) and the compact form only as `name[ARGS]{...}`: "
                 "`[TOOL_CALLS][...]` and v11's `[TOOL_CALLS]name{...}` give no call")
QWEN3_CODER_WRAPPER = (f"SGLang: its qwen3_coder detector ({SG}/qwen3_coder_detector.py) reads `<function=...>` only "
                       "inside `<tool_call>`; ours (and vLLM's) read the bare function block")
MINIMAX_NULLS = (f"SGLang: its minimax-m2 detector ({SG}/minimax_m2.py) converts the values `none` and `nil` to "
                 "null; ours keeps them as written")
VALUE_WHITESPACE = (f"SGLang: its minimax-m2 and poolside_v1 detectors ({SG}/minimax_m2.py, poolside_v1_detector.py) "
                    "strip a parameter value's trailing newline; ours keeps the value as written")
GEMMA_NULL = (f"SGLang: its gemma4 detector ({SG}/gemma4_detector.py) keeps a bare `null` as the string \"null\"; "
              "ours reads JSON null")
APERTUS_SUFFIX = (f"SGLang: its apertus2509 detector ({SG}/apertus2509_detector.py) reads the call list only up to "
                  "<|tools_suffix|>; a list without it is content, ours reads it")
PROSE = (f"policy: text around calls is kept as content ({PT}, Parser policies: prose kept as content); SGLang "
         "drops the text after the calls")
KIMI_CHANNELS = ("adapter: SGLang's server strips Kimi-K3's channels with its reasoning parser; sglang:NAME splits "
                 "only the think channel, so the response channel's markup stays in the content")
GEMMA_BARE_CALL = (f"policy: Gemma 4's `call:NAME{{...}}` without <|tool_call> is read ({PP}, 2026 families: Gemma 4 "
                   "variants read); SGLang returns it as content")
GPT_OSS_HEADER = (f"SGLang: its gpt-oss detector ({SG}/gpt_oss_detector.py) sees a call only after "
                  "`<|start|>assistant<|channel|>commentary`; a reply whose first message's header is the prompt's "
                  "(`<|channel|>commentary to=...`) is content")
HARMONY_CHANNELS = ("adapter: SGLang's server splits gpt-oss's analysis and final channels with its reasoning parser "
                    "(--reasoning-parser gpt-oss); sglang:NAME splits no Harmony channel, so the analysis text stays "
                    "in the content")
PREFILL = ("adapter: sglang:NAME assumes a pre-filled <think> only when the run's `thinking` option says so, where "
           "our deepseek_r1 and minimax_m2 parsers assume one by default, so a tag-less reply is content there")

H2 = "tests/parsers/test_samples_2026h2_fam_a.py / test_samples_2026h2.py OURS"
MUSE_CHANNELS = ("adapter: SGLang's server splits Muse's to=self message off with its reasoning parser; sglang:NAME "
                 "splits none, so the channel header and the reasoning text stay in the content")
K2_CHANNELS = ("adapter: sglang:NAME splits no K2 Horizon <ifm|think> block (SGLang's server does it with its "
               "reasoning parser), so the block stays in the content")
K2_NO_OPTION = (f"SGLang: its k2_horizon detector ({SG}/k2_v3_detector.py) reads the form from the wire and takes no "
                "`tool_call_format`: an xml call where the template asked for json is read")
LEGACY_DSML = (f"policy: legacy DSML invokes (ASCII bars, no <｜DSML｜tool_calls> block) are kept as calls with an "
               f"error ({H2}); SGLang returns them as content")
UNKNOWN_TOOL = (f"policy: a call to a tool the request did not offer is kept; the evaluator judges it ({H2}); SGLang "
                "drops it")
TOOL_TEXT = (f"policy: an Inkling free-text tool block is visible text, as vLLM reads it ({H2}); SGLang drops it")
NO_ARGS = (f"policy: an Inkling call payload without arguments, inside explicit call markup, is a call with {{}} ({H2}); "
           "SGLang returns it as content")
STRAY_END = (f"policy: a stray </dots_function_call> is removed from the content, as vLLM's streaming path does ({H2}); "
             "SGLang keeps it")

LLAMA_ANYWHERE = (f"policy: our llama3_json reads a JSON call wherever it stands ({PP} §2); SGLang's llama3 detector "
                  f"({SG}/llama32_detector.py) reads calls only after <|python_tag|> or in a reply starting with `{{`")
CUT_KEPT = (f"policy: a call block never closed at a normal stop is read and kept with an error ({PT}, What every "
            "parser shares); SGLang returns it as content")
PYTHONIC_GREEDY = (f"SGLang: its pythonic detector's call-list regex ({SG}/pythonic_detector.py tool_call_regex, a "
                   "greedy `.*` under DOTALL) spans from the first `[` to the last `]`, across the text between two "
                   "lists; that span does not parse, so both calls and the text are dropped")
KIMI_LAZY = (f"SGLang: its kimi_k2 detector's call regex ({SG}/kimik2_detector.py tool_call_regex, `\\{{.*?\\}}` then "
             "<|tool_call_end|>) runs past an argument object that never closes into the next call: two calls become "
             "one, named by the first, with the rest of the text as its arguments")
GPT_OSS_CONSTRAIN = (f"SGLang: its gpt-oss detector ({SG}/gpt_oss_detector.py tool_extract_pattern) reads a call only "
                     "from a `to=NAME <|constrain|>json<|message|>` header; a header without `<|constrain|>json` gives "
                     "no call")
MINIMAX_NULLABLE = (f"SGLang: its minimax-m2 detector returns null for every value of a parameter whose schema admits "
                    f"null ({SG}/minimax_m2.py _convert_param_value_with_types), where SGLang's own later regression "
                    "test test_anyof_with_null_should_preserve_string_value (the sample's source) expects the string")
GLM47_NAME = (f"SGLang: its glm47 detector takes all between <tool_call> and the first <arg_key> as the name, unstripped "
              f"({SG}/glm47_moe_detector.py func_detail_regex): a name followed by a newline (GLM-4.5's layout) names "
              "no declared tool, so the call is dropped")
NO_TOOLS = (f"SGLang: FunctionCallParser.parse_non_stream ({SG}/function_call_parser.py) returns the text untouched when "
            "the request declares no tools (the sample declares none and expects no call), so the family's markup "
            "stays in the content; ours reads every reply, a WildToolBench step always declaring its tools")
MINIMAX_M3_ONEOF = (f"SGLang: its minimax-m3 detector types a value only by a `type` key ({SG}/minimax_m3.py "
                    "_schema_types): a `oneOf` integer|object parameter counts as untyped, so `5` stays the string "
                    "\"5\"")
MUSE_LEAF = (f"SGLang: its muse detector resolves an undeclared namespaced name to the one declared tool with the same "
             f"last segment ({SG}/muse_glimmer_detector.py _normalize_name: `foo.get_weather` -> get_weather); ours "
             "strips only the doubled namespace (`x.x`) and keeps the name as written")
MUSE_SELF_TEXT = ("adapter: sglang:NAME splits off no Muse `to=self` message (SGLang's server does it with its "
                  "reasoning parser); SGLang's detector drops the header, so that message's text (the pre-filled `r`, "
                  "or the reasoning) stays in the content")
INKLING_LAST_FRAME = ("adapter: sglang:NAME strips the trailing <|end_message|> (an end-of-turn marker for our parsers), "
                      f"so SGLang's inkling detector ({SG}/inkling_detector.py detect_and_parse) finds the last frame "
                      "unterminated and recovers the last call alone, dropping the visible text and the earlier calls; "
                      "kept, the detector leaves <|end_message|> in a call-less reply's content (its server's reasoning "
                      "parser strips it), so neither choice matches the server here")
INKLING_QUOT = (f"policy: `&quot;` written where a JSON quote belongs is read as the quote, only when the payload is not "
                f"JSON as written ({PP}, 2026 families: the Inkling rows); SGLang returns the payload as content")
COHERE_CUT = (f"policy: a call object never closed is kept with its raw arguments and an error ({PT}, Parser policies: "
              "broken calls kept with an error); SGLang's cohere_command4 detector completes the cut JSON into a call")
COHERE_NOT_LIST = (f"policy: a Cohere action that is not a JSON list is an error and stays in the content as written "
                   f"({PP}, 2026 families: Muse, K2 Horizon, Command 4 rows); SGLang drops the action, keeping the text "
                   "before it")
COHERE_TEXT = ("adapter: sglang:NAME runs no Command 4 reasoning parser, which on SGLang's server takes the answer out "
               "of <|START_TEXT|>...<|END_TEXT|> (sglang/srt/parser/reasoning_parser.py); the cohere_command4 detector "
               "leaves a reply without an action untouched, so the tags (and <co> citation markup, which ours also "
               "removes and SGLang nowhere does) stay in the content")
GEMMA_COLON = (f"policy: Gemma 4's `<|tool_call>:NAME{{` opener is read ({PP}, 2026 families: Gemma 4 variants read); "
               f"SGLang's gemma4 detector ({SG}/gemma4_detector.py) reads a call only after `<|tool_call>call:`")

NAMED: dict[str, str] = {
    **dict.fromkeys(["reference:2", "reference:3", "reference:22", "reference:56", "reference:82", "2026-b:114",
                     "2026-a:142"], BROKEN),
    **dict.fromkeys(["reference:74", "reference:83", "reference:108", "2026-a:45", "2026-a:11", "2026-a:101"],
                    UNREADABLE),
    **dict.fromkeys([f"reference:{n}" for n in (4, 5, 6, 7, 8)], QWEN25_NEWLINES),
    **dict.fromkeys([f"reference:{n}" for n in (101, 109, 110, 111, 112, 113)], MISTRAL_FORMS),
    **dict.fromkeys(["reference:122", "2026-b:69", "2026-b:75"], QWEN3_CODER_WRAPPER),
    **dict.fromkeys(["reference:165", "reference:166"], MINIMAX_NULLS),
    **dict.fromkeys(["reference:163", "2026-a:97"], VALUE_WHITESPACE),
    "2026-b:154": GEMMA_NULL, "2026-b:63": APERTUS_SUFFIX, "2026-b:30": BROKEN,
    **dict.fromkeys(["reference:55", "reference:92"], PROSE),
    **dict.fromkeys(["2026-a:37", "2026-a:195", "2026-a:196"], KIMI_CHANNELS),
    **dict.fromkeys(["2026-b:32", "2026-b:33", "2026-b:35"], GEMMA_BARE_CALL),
    **dict.fromkeys(["reference:134", "reference:138"], GPT_OSS_HEADER),
    **dict.fromkeys(["reference:136", "reference:140"], HARMONY_CHANNELS),
    "reference:87": PREFILL, "reference:185": PREFILL,
    **dict.fromkeys([f"2026h2-a:{n}" for n in (1, 2, 3, 5, 7, 11, 18, 20)], MUSE_CHANNELS),
    **dict.fromkeys(["2026h2-a:17", "2026h2-a:26", "2026h2-a:27", "2026h2-a:38", "2026h2-a:39", "2026h2-b:112",
                     "2026h2-b:126"], UNREADABLE),
    "2026h2-a:25": K2_NO_OPTION,
    **dict.fromkeys(["2026h2-a:36", "2026h2-a:37"], K2_CHANNELS),
    "2026h2-a:49": BROKEN, "2026h2-a:53": TOOL_TEXT, "2026h2-a:54": NO_ARGS,
    **dict.fromkeys(["2026h2-a:71", "2026h2-a:72"], LEGACY_DSML),
    **dict.fromkeys(["2026h2-b:111", "2026h2-b:114"], UNKNOWN_TOOL),
    "2026h2-b:116": STRAY_END,
    "reference:19": LLAMA_ANYWHERE, "reference:29": BROKEN, "reference:40": PYTHONIC_GREEDY, "reference:70": KIMI_LAZY,
    **dict.fromkeys(["reference:137", "reference:139"], GPT_OSS_CONSTRAIN),
    "reference:193": MINIMAX_NULLABLE, "reference:194": CUT_KEPT,
    **dict.fromkeys(["2026-a:14", "2026-a:16"], GLM47_NAME),
    **dict.fromkeys(["2026-a:41", "2026h2-a:45", "2026h2-a:46", "2026h2-a:47", "2026h2-a:50"], NO_TOOLS),
    **dict.fromkeys(["2026-a:139", "2026h2-a:88"], COHERE_TEXT),
    **dict.fromkeys(["2026-a:102", "2026h2-a:10"], UNKNOWN_TOOL),
    "2026-a:218": MINIMAX_M3_ONEOF, "2026h2-a:9": MUSE_LEAF,
    **dict.fromkeys(["2026h2-a:12", "2026h2-a:15", "2026h2-a:16", "2026h2-a:19", "2026h2-a:21"], MUSE_SELF_TEXT),
    **dict.fromkeys(["2026h2-a:42", "2026h2-a:44", "2026h2-a:51", "2026h2-a:52"], INKLING_LAST_FRAME),
    "2026h2-a:57": INKLING_QUOT, "2026h2-a:91": COHERE_CUT, "2026h2-a:92": COHERE_NOT_LIST, "2026h2-b:153": GEMMA_COLON,
}
# Differences measured but not yet traced to a cause: listed so that a change still fails the test.
UNEXAMINED: frozenset[str] = frozenset()
NOT_RUN = {"2026-a:100": "the poolside_v1 sample vLLM's regex hangs on (tests/parsers/test_vllm_parity.py NOT_RUN)"}
KINDS = {"policy: ": "policy", "SGLang: ": "SGLang", "adapter: ": "adapter"}


def _sglang_available() -> str | None:
    from wtb_local.formats.parsers.sglang_native import PYTHON_VAR, python

    if python() is not None:
        return None
    return f"SGLang's venv is not known: set {PYTHON_VAR} to its Python (.ci/run builds .venv-sglang)"


@pytest.fixture(scope="module")
def outcomes() -> list:
    why = _sglang_available()
    if why:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(why)
        pytest.skip(why)
    return sglang_parity.compare(skip=set(NOT_RUN))


def test_every_difference_is_listed(outcomes: list) -> None:
    differing = {o.sample.key: o for o in outcomes if o.differs}
    listed = set(NAMED) | UNEXAMINED
    unlisted = {k: f"{o.ours} vs sglang:{o.vllm}: {','.join(o.differs)} {o.detail[:300]}"
                for k, o in differing.items() if k not in listed}
    assert unlisted == {}, "differences with SGLang's parser that are not listed (NAMED, UNEXAMINED):"
    assert sorted(listed - set(differing)) == [], "listed differences that are gone"
    assert not set(NAMED) & UNEXAMINED
    assert all(any(cause.startswith(p) for p in KINDS) for cause in NAMED.values())


def counts_table(outcomes: list) -> str:
    """Per family of ours: SGLang's parser, samples, same, differences by kind, not yet examined."""
    columns = ("samples", "same", "policy", "SGLang", "adapter", "not yet examined")
    rows: dict[tuple[str, str], Counter] = {}
    for o in outcomes:
        row = rows.setdefault((o.ours, o.vllm), Counter())
        row["samples"] += 1
        if not o.differs:
            row["same"] += 1
        elif o.sample.key in UNEXAMINED:
            row["not yet examined"] += 1
        else:
            row[next(kind for prefix, kind in KINDS.items() if NAMED[o.sample.key].startswith(prefix))] += 1
    lines = [("Measured on SGLang 0.5.23 by `tests/parsers/test_sglang_parity.py` (the families SGLang has a parser "
             "for)."), "", ("| our parser | SGLang parser | samples | same | differ: our policy | differ: SGLang's rule "
             "| differ: sglang: adapter | differ: not yet examined |"), "|---|---|---:|---:|---:|---:|---:|---:|"]
    total: Counter = Counter()
    for (ours, theirs), row in sorted(rows.items()):
        lines.append(f"| {ours} | {theirs} | " + " | ".join(str(row[c]) for c in columns) + " |")
        total.update(row)
    lines.append("| **all** | | " + " | ".join(f"**{total[c]}**" for c in columns) + " |")
    return "\n".join(lines) + "\n"


def test_the_docs_table_is_the_measured_one(outcomes: list) -> None:
    found = re.search(r"<!-- sglang-parity -->\n(.*?)<!-- /sglang-parity -->", DOCS.read_text(encoding="utf-8"),
                      re.DOTALL)
    assert found is not None and found.group(1) == counts_table(outcomes), counts_table(outcomes)
