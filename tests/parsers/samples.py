"""The harness the collected-output tests share (test_samples_2026h2*.py, test_samples_deepseek_glm_kimi_minimax.py):
a fixture of real outputs, one JSON row per line, each keyed by its line in the collection, compared exactly with
what its source asserts, except for the samples a test declares a policy difference (OURS) with wtb_local's
exact result; every sample's errors are exact (ERRORS, none where a line is absent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wtb_local.contract.schema import ParseResult

# line -> (policy, wtb_local's exact content, reasoning, [[name, arguments text], ...])
Ours = dict[int, tuple[str, str | None, str | None, list[list[str]]]]


def load(path: Path) -> dict[int, dict[str, Any]]:
    """The fixture's rows by their line in the collection."""
    return {row["line"]: row for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def mismatch(sample: dict[str, Any], got: ParseResult) -> list[str]:
    """How the reading differs from what the source asserts: the content and reasoning where it states them (null
    == "", stripped), the call names, and each call's arguments (as JSON, or `arguments_raw` as written) and id
    where given."""
    problems = []
    if "expected_content" in sample and (got.content or "").strip() != (sample["expected_content"] or "").strip():
        problems.append(f"content {got.content!r} != {sample['expected_content']!r}")
    if "expected_reasoning" in sample and (got.reasoning or "").strip() != (sample["expected_reasoning"] or "").strip():
        problems.append(f"reasoning {got.reasoning!r} != {sample['expected_reasoning']!r}")
    want = sample["expected_calls"]
    if [c.name for c in got.tool_calls] != [w["name"] for w in want]:
        problems.append(f"calls {[c.name for c in got.tool_calls]} != {[w['name'] for w in want]}")
        return problems
    for c, w in zip(got.tool_calls, want):
        if "arguments" in w and _arguments(c.arguments) != w["arguments"]:
            problems.append(f"arguments of {c.name}: {c.arguments} != {json.dumps(w['arguments'])}")
        if "arguments_raw" in w and c.arguments != w["arguments_raw"]:
            problems.append(f"raw arguments of {c.name}: {c.arguments!r} != {w['arguments_raw']!r}")
        if "id" in w and c.id != w["id"]:
            problems.append(f"id {c.id!r} != {w['id']!r}")
    return problems


def check(line: int, sample: dict[str, Any], name: str, got: ParseResult, *, ours: Ours,
          errors: dict[int, list[str]]) -> None:
    """One sample read by parser `name`: as its source asserts, or as OURS declares (and then not as its source
    asserts: a difference that went away must leave OURS), with exactly the errors ERRORS lists."""
    problems = mismatch(sample, got)
    if line in ours:
        policy, content, reasoning, calls = ours[line]
        assert problems, f"L{line} is declared a policy difference but matches its source: remove it from OURS"
        assert (got.content, got.reasoning, [[c.name, c.arguments] for c in got.tool_calls]) == (
            content, reasoning, calls), f"L{line} [{name}] ({policy})"
    else:
        assert not problems, f"L{line} [{name}] {sample['source']}: " + "; ".join(problems)
    assert got.errors == errors.get(line, []), f"L{line} [{name}]"


def tally(samples: dict[int, dict[str, Any]], ours: Ours) -> dict[str, list[int]]:
    """Per family: [samples read exactly as their source asserts, samples]."""
    counts: dict[str, list[int]] = {}
    for line, sample in samples.items():
        family = counts.setdefault(sample["family"], [0, 0])
        family[0] += line not in ours
        family[1] += 1
    return counts
