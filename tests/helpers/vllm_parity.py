"""Our parsers against the installed vLLM's own parsers on every real model output the tests hold.

Each sample of tests/fixtures/parsers (the reference samples `output_samples.jsonl` and the 2026 samples
under `2026/`) is read by the parser its model selects here and by vLLM's parser of the name ours mirrors
(`vllm:NAME`, parsers/vllm_native.py), with the same text, tools, finish reason and reasoning pre-fill; the
two results are compared as `parsers compare` compares parsers (commands/parser_comparison.py: calls as
parsed JSON, a failed parse, content with whitespace collapsed). `tests/parsers/test_vllm_parity.py` fails on
a difference that docs/parser-policies.md §4 does not name, and `scripts/vllm_parity.py` prints the table.

vLLM's parsers look their special tokens up in the tokenizer's vocabulary: the samples are read with one
tiny tokenizer (tests/helpers/tiny_model.py) whose special tokens are every special-token-shaped literal of the
fixtures' chat templates and samples, plus the tag-shaped markers vLLM's parsers ask for (`SPECIAL_TAGS`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
FILES = {"reference": FIXTURES / "parsers" / "output_samples.jsonl",
         "2026-a": FIXTURES / "parsers" / "2026" / "fam_a_samples.jsonl",
         "2026-b": FIXTURES / "parsers" / "2026" / "gemma-qwen35-olmo.jsonl"}
# Markers that vLLM's parsers find in the vocabulary but that are not shaped like special tokens.
SPECIAL_TAGS = ("<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_calls>", "</tool_calls>",
                "<function_calls>", "</function_calls>", "<seed:tool_call>", "</seed:tool_call>",
                "<seed:think>", "</seed:think>", "<minimax:tool_call>", "</minimax:tool_call>",
                "<start_function_call>", "<end_function_call>", "<escape>", "<|tool_call>", "<tool_call|>",
                "<|python_tag|>", "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "<|tool_calls_section_begin|>",
                "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_end|>",
                "<|tool_call_argument_begin|>", "<|tool_list_start|>", "<|tool_list_end|>")
_SHAPED = re.compile(r"<\|[^\s|<>]{1,48}\|>|<｜[^\s｜<>]{1,48}｜>|\[/?[A-Z][A-Z_]{1,30}\]|<[a-z_:]{2,30}\|?>|</[a-z_:]{2,30}>")


@dataclass
class Sample:
    key: str  # "<file>:<line>"
    family: str
    model: str
    text: str
    tools: list[dict[str, Any]] | None
    finish_reason: str
    options: dict[str, Any] = field(default_factory=dict)


def samples() -> list[Sample]:
    """Every sample, with the reasoning pre-fill and finish reason its own test reads it with."""
    from tests.parsers import (
        test_samples,
        test_samples_deepseek_glm_kimi_minimax,
        test_samples_gemma_qwen35_olmo,
    )

    found = []
    rows = FILES["reference"].read_text(encoding="utf-8").splitlines()
    for line, row in enumerate(map(json.loads, rows), start=1):
        found.append(Sample(f"reference:{line}", row["family"], row["model"], row["raw"], row.get("tools"),
                            "stop", dict(test_samples.OPTIONS.get(line, {}))))
    for row in map(json.loads, FILES["2026-a"].read_text(encoding="utf-8").splitlines()):
        prefilled = test_samples_deepseek_glm_kimi_minimax._prefilled(row)
        found.append(Sample(f"2026-a:{row['line']}", row["family"], row["model"], row["text"], row.get("tools"),
                            test_samples_deepseek_glm_kimi_minimax._finish(row), {"thinking": True} if prefilled else {}))
    module = test_samples_gemma_qwen35_olmo
    for row in map(json.loads, FILES["2026-b"].read_text(encoding="utf-8").splitlines()):
        found.append(Sample(f"2026-b:{row['line']}", row["family"], row["model"], row["text"], row.get("tools"),
                            "stop", dict(module.OPTIONS.get(row["line"], {}))))
    return found


def our_parser_name(sample: Sample) -> str:
    from tests.parsers.test_samples_gemma_qwen35_olmo import SELECTED
    from wtb_local.parsers import select_parser

    if sample.model in SELECTED:
        return SELECTED[sample.model]
    return select_parser(sample.model)


def mirrored_vllm_name(ours: str, registered: tuple[str, ...]) -> str | None:
    """The vLLM parser name ours mirrors (the first of its `vllm_names` the installed vLLM registers)."""
    from wtb_local.parsers import parser_class

    return next((name for name in parser_class(ours).vllm_names if name in registered), None)


def special_tokens() -> list[str]:
    texts = [path.read_text(encoding="utf-8") for path in FILES.values()]
    for templates in (FIXTURES / "parsers" / "chat_templates.json", FIXTURES / "rendering" / "chat_templates.json"):
        if templates.is_file():
            texts.append(templates.read_text(encoding="utf-8"))
    found = set(SPECIAL_TAGS)
    for text in texts:
        found.update(_SHAPED.findall(json.loads(json.dumps(text))))
    # the JSON files escape non-ASCII and quotes; the decoded sample texts hold the tokens as written
    for path in FILES.values():
        for row in map(json.loads, path.read_text(encoding="utf-8").splitlines()):
            found.update(_SHAPED.findall(row.get("raw") or row.get("text") or ""))
    return sorted(found)


def build_tokenizer(out_dir: Path) -> Any:
    from transformers import AutoTokenizer

    from tests.helpers.tiny_model import build_tiny_tokenizer

    build_tiny_tokenizer(out_dir, "{{ messages }}", special_tokens=special_tokens(), vocab_size=2048)
    return AutoTokenizer.from_pretrained(out_dir)


@dataclass
class Outcome:
    sample: Sample
    ours: str
    vllm: str | None  # None: vLLM registers no parser of the name ours mirrors
    differs: list[str]  # calls / failure / content, or ["crash"] / ["refused"]
    detail: str = ""


def compare(tokenizer: Any, *, skip: set[str] = frozenset()) -> list[Outcome]:
    """Every sample but those in `skip` through both parsers."""
    from wtb_local.commands.parser_comparison import differences
    from wtb_local.parsers import get_parser, parse_completion
    from wtb_local.parsers.vllm_native import VllmParserSetupError, registered_names

    registered = registered_names()
    outcomes = []
    for sample in samples():
        if sample.key in skip:
            continue
        ours = our_parser_name(sample)
        name = mirrored_vllm_name(ours, registered)
        if name is None:
            outcomes.append(Outcome(sample, ours, None, []))
            continue
        mine = parse_completion(get_parser(ours, **sample.options), sample.text, tools=sample.tools,
                                finish_reason=sample.finish_reason)
        try:
            theirs_parser = get_parser(f"vllm:{name}", tokenizer=tokenizer, **sample.options)
        except VllmParserSetupError as exc:
            outcomes.append(Outcome(sample, ours, name, ["refused"], str(exc)))
            continue
        theirs = parse_completion(theirs_parser, sample.text, tools=sample.tools, finish_reason=sample.finish_reason)
        crashed = [e for e in theirs.errors if "crashed" in e]
        if crashed:
            outcomes.append(Outcome(sample, ours, name, ["crash"], crashed[0]))
            continue
        # vLLM's parsers report no errors: a failed parse of ours against a reply of theirs is a difference
        outcomes.append(Outcome(sample, ours, name, differences(theirs, mine),
                                json.dumps({"ours": _view(mine), "vllm": _view(theirs)}, ensure_ascii=False)))
    return outcomes


def _view(result: Any) -> dict[str, Any]:
    return {"calls": [[c.name, c.arguments] for c in result.tool_calls], "content": result.content,
            "errors": result.errors}


def counts_table(outcomes: list[Outcome], named: dict[str, str], not_run: dict[str, str]) -> str:
    """Per family of ours: samples, same result, differences by cause kind (policy / vLLM bug / adapter /
    not yet traced), not run; markdown, sorted by parser."""
    from wtb_local.parsers.vllm_native import version

    kinds = ("policy", "vLLM bug", "adapter", "not yet traced")

    def kind(cause: str) -> str:
        if cause.startswith("policy"):
            return "policy"
        if cause.startswith("not yet traced"):
            return "not yet traced"
        if cause.startswith(("vLLM bug", "vLLM 0.32's parser has no text interface")):
            return "vLLM bug"
        return "adapter"

    rows: dict[tuple[str, str], dict[str, int]] = {}
    for outcome in outcomes:
        row = rows.setdefault((outcome.ours, outcome.vllm or "-"), dict.fromkeys(("samples", "same", *kinds, "not run"), 0))
        row["samples"] += 1
        if outcome.differs:
            row[kind(named.get(outcome.sample.key, "not named"))] += 1
        else:
            row["same"] += 1
    by_key = {s.key: s for s in samples()}
    for key in not_run:
        ours = our_parser_name(by_key[key])
        row = next(r for (name, _), r in rows.items() if name == ours)
        row["samples"] += 1
        row["not run"] += 1
    head = ("| our parser | vLLM parser | samples | same | differ: our policy | differ: vLLM bug | "
            "differ: vllm: adapter | differ: not yet traced | not run |")
    lines = [(f"Measured on vLLM {version()} by `tests/parsers/test_vllm_parity.py` (`scripts/vllm_parity.py` "
             "prints it)."), "", head, "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    total = dict.fromkeys(("samples", "same", *kinds, "not run"), 0)
    for (ours, theirs), row in sorted(rows.items()):
        lines.append(f"| {ours} | {theirs} | " + " | ".join(str(row[k]) for k in total) + " |")
        for k in total:
            total[k] += row[k]
    lines.append("| **all** | | " + " | ".join(f"**{total[k]}**" for k in total) + " |")
    return "\n".join(lines) + "\n"
