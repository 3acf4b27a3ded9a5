"""Our parsers against the installed vLLM's own parsers on every real model output the tests hold
(tests/helpers/vllm_parity.py): each difference is named here, as our documented policy
(docs/parser-policies.md), a known vLLM bug with its upstream thread, or a difference not yet traced
(pinned, so that a vLLM release that changes it shows). The test fails on a difference not named and on a
named difference that is gone, so a new vLLM release shows exactly what it changed. Imports vLLM, starts no
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

# Our documented policies (docs/parser-policies.md).
PROSE = "policy: text around calls is kept as content; vLLM drops the text after the calls (vllm-project/vllm#56263)"
BROKEN = "policy: a broken call is kept with its raw arguments and an error; vLLM returns the text as content"
UNREADABLE = "policy: an unreadable call block is a parse error on the step; vLLM returns it as content, no error"
DSML = "policy: DSML values typed by their string= marker and a lone `arguments` parameter kept as written"
FOREIGN_BLOCK = "policy: a V3.2 <｜DSML｜function_calls> block in a V4 reply is an error, not calls (vLLM reads it)"
BAD_TAG = "policy: a <function= tag without its closing > is an error, not a call (vLLM reads a call)"
# Known vLLM bugs.
PYTHONIC = ("vLLM bug: its pythonic parser reads calls only when the whole output is the call list; text before "
            "or after leaves them in content (vllm-project/vllm#22917)")
MARKUP_IN_VALUE = ("vLLM bug: markup inside a string argument is stripped (`<div>x</div>` -> `x`; the case "
                   "vllm-project/vllm#24847 added as a test)")
EMPTY_NAME = "vLLM bug: an empty <tool_call> block becomes a call with an empty function name"
FUNCTOOLS_TEXT = "vLLM bug: text after an empty `functools[]` list is dropped"
NO_TEXT_INTERFACE = ("vLLM 0.32's parser has no text interface: `openai` is a stub (the serving layer reads "
                     "harmony tokens), `cohere_command3` does not implement extract_tool_calls: a parser error")
# What the vllm: adapter does not do (parsers/vllm_native.py).
REASONING = ("vLLM's server runs its reasoning parser (--reasoning-parser) before the tool parser; vllm:NAME "
             "splits off a leading block with the family's think tags only, so other reasoning markup "
             "(<seed:think> budgets, <answer>, a pre-filled block holding calls) reaches vLLM's tool parser")
MISTRAL = ("vLLM's mistral parser picks the call format from the tokenizer: with a tokenizer that is not "
           "Mistral's (the test's stand-in) it reads `[TOOL_CALLS]name{args}` and takes `[` for the name")
UNTRACED = ("not yet traced: vLLM's parser (most are vllm/parser/engine adapters) returns other calls or "
            "content with the test's stand-in tokenizer; pinned so a change shows")

NAMED: dict[str, str] = {
    **dict.fromkeys(["reference:3", "reference:22", "reference:29", "reference:147", "2026-a:89", "2026-b:59",
                     "2026-b:114"], BROKEN),
    **dict.fromkeys(["reference:19", "reference:27", "reference:28", "reference:55", "reference:92",
                     "reference:145", "reference:155", "reference:174", "reference:195", "2026-a:87",
                     "reference:107"], PROSE),
    **dict.fromkeys([f"reference:{n}" for n in (38, 39, 40, 44, 45, 46)], PYTHONIC),
    **dict.fromkeys(["reference:74", "reference:83", "2026-a:45", "2026-a:91"], UNREADABLE),
    **dict.fromkeys(["reference:65", "reference:196"], MARKUP_IN_VALUE),
    **dict.fromkeys(["reference:18", "reference:87", "reference:168", "reference:169", "reference:177",
                     "reference:178", "reference:179", "reference:180", "reference:185", "reference:187",
                     "reference:188", "reference:199"], REASONING),
    **dict.fromkeys([f"reference:{n}" for n in (101, 102, 103, 104, 105, 106, 108, 114, 115)], MISTRAL),
    **dict.fromkeys([f"reference:{n}" for n in (134, 135, 136, 137, 138, 139, 140, 198)]
                    + [f"2026-a:{n}" for n in (139, 140, 141, 142)], NO_TEXT_INTERFACE),
    "reference:124": BAD_TAG,
    "reference:157": FUNCTOOLS_TEXT,
    "2026-a:6": DSML, "2026-a:8": DSML,
    "2026-a:11": FOREIGN_BLOCK,
    "2026-a:101": EMPTY_NAME,
    **dict.fromkeys(["reference:60", "2026-a:43", "2026-a:195", "2026-a:196", "2026-a:198", "2026-a:199",
                     "2026-a:200", *[f"2026-a:{n}" for n in range(207, 222)], "2026-b:26", "2026-b:32",
                     "2026-b:33", "2026-b:35", "2026-b:71", "2026-b:77", "2026-b:123", "2026-b:145", "2026-b:156",
                     "2026-b:157", "2026-b:160"], UNTRACED),
}
# Samples not read by vLLM's parser here, with why.
NOT_RUN = {"2026-a:100": ("vLLM bug: poolside_v1's call regex backtracks catastrophically on a long unterminated "
                          "whitespace block (vllm-project/vllm#54678, the same regex in 0.34.0): 296 s for this "
                          "4,121-character sample on 2 CPU cores")}


@pytest.fixture(scope="module")
def outcomes() -> list[vllm_parity.Outcome]:
    with tempfile.TemporaryDirectory() as scratch:
        tokenizer = vllm_parity.build_tokenizer(Path(scratch) / "tokenizer")
        return vllm_parity.compare(tokenizer, skip=set(NOT_RUN))


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
    assert len(outcomes) + len(NOT_RUN) == len(vllm_parity.samples())


def test_the_installed_vllm_default_memory_share_is_the_one_planned() -> None:
    """wtb_local/vllm_release.py's rule for the installed release, against vLLM's own CacheConfig."""
    import dataclasses

    import vllm  # noqa: F401 - vllm.config needs the package initialised first
    from vllm.config.cache import CacheConfig

    from wtb_local.vllm_release import default_gpu_memory_utilization, installed_version

    field = next(f for f in dataclasses.fields(CacheConfig) if f.name == "gpu_memory_utilization")
    default = field.default.default if hasattr(field.default, "default") else field.default
    if default is None:  # vLLM >= 0.34: the class default, 1.0 with the extensible KV cache
        default = CacheConfig.DEFAULT_GPU_MEMORY_UTILIZATION
    assert default_gpu_memory_utilization(installed_version(), "cpu") == default
