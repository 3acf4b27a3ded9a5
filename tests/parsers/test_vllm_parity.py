"""Our parsers against the installed vLLM's own parsers on every real model output the tests hold
(tests/helpers/vllm_parity.py): each difference is named here, as our documented policy
(docs/parser-policies.md, docs/parsers-and-templates.md), a vLLM bug with its upstream thread (or the exact
bug where none was found upstream), or what the `vllm:` adapter does differently; each cause starts with its
kind (`policy:`, `vLLM bug:`, `adapter:`). The test fails on a difference not named and on a named
difference that is gone, so a new vLLM release shows exactly what it changed. Imports vLLM, starts no
engine. The per-family counts in docs/parser-policies.md §4 are checked against `counts_table()`."""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm")

from tests.helpers import vllm_parity

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
                     "harmony tokens), `cohere_command3` does not implement extract_tool_calls: a parser error")
# What the vllm: adapter does not do (parsers/vllm_native.py).
REASONING = ("adapter: vLLM's server runs its reasoning parser (--reasoning-parser) before the tool parser; vllm:NAME "
             "splits off the family's reasoning block only, so Hunyuan's <answer> wrapper reaches vLLM's tool "
             "parser")
PREFILL = ("adapter: vLLM's server learns a pre-filled <think> from the prompt; vllm:NAME assumes one only when the run's "
           "`thinking` option says so, where our deepseek_r1 and minimax_m2 parsers assume it by default (their "
           "templates pre-fill it), so a tag-less reply is content there and reasoning here")

NAMED: dict[str, str] = {
    **dict.fromkeys(["reference:3", "reference:22", "reference:29", "reference:147", "2026-a:89", "2026-b:59",
                     "2026-b:114"], BROKEN),
    **dict.fromkeys(["reference:19", "reference:27", "reference:28", "reference:55", "reference:92",
                     "reference:145", "reference:155", "reference:174", "reference:195", "2026-a:87",
                     "reference:107"], PROSE),
    **dict.fromkeys([f"reference:{n}" for n in (38, 39, 40, 44, 45, 46)], PYTHONIC),
    **dict.fromkeys(["reference:74", "reference:83", "reference:108", "2026-a:45", "2026-a:91"], UNREADABLE),
    **dict.fromkeys(["reference:177", "reference:178", "reference:179", "reference:180"], REASONING),
    "reference:87": PREFILL, "reference:185": PREFILL,
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
}
# Samples not read by vLLM's parser here, with why.
NOT_RUN = {"2026-a:100": ("vLLM bug: poolside_v1's call regex backtracks catastrophically on a long unterminated "
                          "whitespace block (vllm-project/vllm#54678, the same regex in 0.34.0): 296 s for this "
                          "4,121-character sample on 2 CPU cores")}


@pytest.fixture(scope="module")
def outcomes() -> list[vllm_parity.Outcome]:
    with tempfile.TemporaryDirectory() as scratch:
        return vllm_parity.compare(vllm_parity.build_tokenizers(Path(scratch)), skip=set(NOT_RUN))


def test_every_difference_is_named(outcomes: list[vllm_parity.Outcome]) -> None:
    differing = {o.sample.key: o for o in outcomes if o.differs}
    unnamed = {key: f"{o.ours} vs vllm:{o.vllm}: {','.join(o.differs)} {o.detail[:300]}"
               for key, o in differing.items() if key not in NAMED}
    assert unnamed == {}, "differences with vLLM's parser that are not named (NAMED):"
    gone = sorted(set(NAMED) - set(differing))
    assert gone == [], "named differences that are gone (remove them from NAMED)"
    assert not any(o.vllm is None for o in outcomes), "a family without a vLLM parser of its name"


def test_the_docs_table_is_the_measured_one(outcomes: list[vllm_parity.Outcome]) -> None:
    table = vllm_parity.counts_table(outcomes, NAMED, NOT_RUN)
    text = DOCS.read_text(encoding="utf-8")
    found = re.search(r"<!-- vllm-parity -->\n(.*?)<!-- /vllm-parity -->", text, re.DOTALL)
    assert found is not None and found.group(1) == table, table


def test_named_causes_are_counted_once(outcomes: list[vllm_parity.Outcome]) -> None:
    causes = Counter(NAMED.values())
    assert sum(causes.values()) == len(NAMED) == sum(1 for o in outcomes if o.differs)
    kinds = Counter(vllm_parity.cause_kind(cause) for cause in [*NAMED.values(), *NOT_RUN.values()])
    assert set(kinds) <= {"policy", "vLLM bug", "adapter"}
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
