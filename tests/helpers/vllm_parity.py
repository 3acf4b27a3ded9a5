"""Our parsers against the installed vLLM's own parsers on every real model output the tests hold.

Each sample of tests/fixtures/parsers (the reference samples `output_samples.jsonl` and the 2026 samples
under `2026/`) is read by the parser its model selects here and by vLLM's parser of the name ours mirrors
(`vllm:NAME`, parsers/vllm_native.py), with the same text, tools, finish reason and reasoning pre-fill; the
two results are compared as `parsers compare` compares parsers (commands/parser_comparison.py: calls as
parsed JSON, a failed parse, content with whitespace collapsed). `tests/parsers/test_vllm_parity.py` fails on
a difference that docs/parser-policies.md §4 does not name, and `scripts/vllm_parity.py` prints the table.

vLLM's parsers look their markers up in the tokenizer's vocabulary, and its parser engines drop every special
token that is not one of their terminals: the samples are read with a tiny stand-in tokenizer
(tests/helpers/tiny_model.py) whose special tokens are the control tokens (`<|x|>`, `<｜x｜>`, `[X]`, Gemma 4's
`<|x>`/`<x|>`) of the fixtures' chat templates and samples, and whose plain added tokens are the tag-shaped
markers (`<tool_call>`, `<think>`, `]<]minimax[>[`) of `SPECIAL_TAGS` and the chat templates, as the real
tokenizers hold them (non-special, so a parser engine reads them as text). A family whose real tokenizer lacks
a token that changes what vLLM's parser does gets its own stand-in without it (`WITHOUT`).
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
         "2026-b": FIXTURES / "parsers" / "2026" / "gemma-qwen35-olmo.jsonl",
         "2026h2-a": FIXTURES / "parsers" / "2026h2" / "fam_a_samples.jsonl",
         "2026h2-b": FIXTURES / "parsers" / "2026h2" / "fam_b_samples.jsonl"}
# Markers that vLLM's parsers look up in the vocabulary but that no fixture writes in a special-token shape.
SPECIAL_TAGS = ("<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_calls>", "</tool_calls>",
                "<function_calls>", "</function_calls>", "<seed:tool_call>", "</seed:tool_call>",
                "<seed:think>", "</seed:think>", "<minimax:tool_call>", "</minimax:tool_call>",
                "<start_function_call>", "<end_function_call>", "<escape>", "<|tool_call>", "<tool_call|>",
                "<|python_tag|>", "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "<|tool_calls_section_begin|>",
                "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_end|>",
                "<|tool_call_argument_begin|>", "<|tool_list_start|>", "<|tool_list_end|>", "]<]minimax[>[",
                "<mm:think>", "</mm:think>")
# Control tokens: `<|x|>`, `<｜x｜>`, `[X]`, and Gemma 4's one-sided `<|x>` / `<x|>`. Real tokenizers mark
# these special; vLLM's parser engines drop every special token that is not one of their terminals.
_CONTROL = re.compile(r"<\|[^\s|<>]{1,48}\|>|<｜[^\s｜<>]{1,48}｜>|\[/?[A-Z][A-Z_]{1,30}\]|<\|[a-z_]{2,30}>|<[a-z_]{2,30}\|>")
# XML-like tags (`<tool_call>`, `<think>`, `<arg_key>`): added tokens the real tokenizers (Qwen3, MiniMax)
# keep non-special, so a parser engine reads them as text; taken from the chat templates only, since a
# sample's own tags (`<city>` inside a MiniMax call) are argument names, not tokens.
_TAG = re.compile(r"<[a-z_:]{2,30}>|</[a-z_:]{2,30}>")
# The second-half 2026 families' namespaced markers (K2 Horizon's `<ifm|tool_call>`, Hy4's
# `<tool_call:opensource>`): added tokens of their tokenizers, taken from those families' samples.
_NAMESPACED = re.compile(r"</?ifm\|[a-z_]{2,30}>|</?[a-z_]{2,30}:opensource>")


@dataclass
class Sample:
    key: str  # "<file>:<line>"
    family: str
    model: str
    text: str
    tools: list[dict[str, Any]] | None
    finish_reason: str
    options: dict[str, Any] = field(default_factory=dict)
    parser: str | None = None  # our parser, where the sample's test names it rather than the model id selecting it


def samples() -> list[Sample]:
    """Every sample, with the reasoning pre-fill and finish reason its own test reads it with."""
    from tests.parsers import (
        test_samples,
        test_samples_2026h2,
        test_samples_2026h2_fam_a,
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
    # the second-half 2026 samples, each with the parser, options and tools its own test reads it with
    fam_a, fam_b = test_samples_2026h2_fam_a, test_samples_2026h2
    for line, row in sorted(fam_a.SAMPLES.items()):
        found.append(Sample(f"2026h2-a:{line}", row["family"], row["model"], row["text"], row.get("tools"), "stop",
                            fam_a.options(row), fam_a.PARSER[row["family"]]))
    for line, row in sorted(fam_b.SAMPLES.items()):
        found.append(Sample(f"2026h2-b:{line}", row["family"], row["model"], row["text"], fam_b.tools_of(row), "stop",
                            fam_b.options(row), fam_b.parser_name(row)))
    return found


def our_parser_name(sample: Sample) -> str:
    from tests.parsers.test_samples_gemma_qwen35_olmo import SELECTED
    from wtb_local.formats.parsers import select_parser

    if sample.parser is not None:
        return sample.parser
    if sample.model in SELECTED:
        return SELECTED[sample.model]
    return select_parser(sample.model)


# The vLLM reasoning parser a server of these families runs (`--reasoning-parser`), read with the tool
# parser as the server composes them (`vllm:TOOL+REASONING`): these families' replies carry reasoning that
# only the reasoning parser knows how to split (Hunyuan's <answer> wrapper, a <think> pre-filled by the
# prompt). The other families are read by the tool parser alone, their reasoning block split as ours does.
REASONING_PARSER = {"hunyuan": "hunyuan_a13b", "deepseek_r1": "deepseek_r1", "minimax_m2": "minimax_m2"}


def mirrored_vllm_name(ours: str, registered: tuple[str, ...]) -> str | None:
    """The vLLM parser name ours mirrors (the first of its `vllm_names` the installed vLLM registers)."""
    from wtb_local.formats.parsers import parser_class

    return next((name for name in parser_class(ours).vllm_names if name in registered), None)


def vllm_parser_name(ours: str, registered: tuple[str, ...]) -> str | None:
    """What `--parser` names vLLM's reading of our family: `vllm:TOOL`, or `vllm:TOOL+REASONING`."""
    name = mirrored_vllm_name(ours, registered)
    if name is None:
        return None
    return f"vllm:{name}" + (f"+{REASONING_PARSER[ours]}" if ours in REASONING_PARSER else "")


def special_tokens() -> tuple[list[str], list[str]]:
    """(special tokens, non-special added tokens) of the stand-in tokenizer: control tokens from the chat
    templates and the samples are special; tag-shaped markers from `SPECIAL_TAGS` and the chat templates
    are plain added tokens."""
    templates = [path.read_text(encoding="utf-8") for path in
                 (FIXTURES / "parsers" / "chat_templates.json", FIXTURES / "rendering" / "chat_templates.json")
                 if path.is_file()]
    # the template files escape non-ASCII; the decoded values hold the tokens as written
    texts = [json.dumps(json.loads(text), ensure_ascii=False) for text in templates]
    for path in FILES.values():
        for row in map(json.loads, path.read_text(encoding="utf-8").splitlines()):
            texts.append(row.get("raw") or row.get("text") or "")
    special = {tag for tag in SPECIAL_TAGS if _CONTROL.fullmatch(tag)}
    added = {tag for tag in SPECIAL_TAGS if tag not in special}
    for text in texts:
        special.update(_CONTROL.findall(text))
    for text in texts[:len(templates)]:
        added.update(_TAG.findall(text))
    for text in texts[len(templates):]:
        added.update(_NAMESPACED.findall(text))
    return sorted(special), sorted(added - special)


# Per family of ours, the stand-in's tokens a real tokenizer of that family lacks. vLLM's mistral parser
# reads a tokenizer without `[ARGS]` as one before v11 (`[TOOL_CALLS][{"name": ..., "arguments": ...}]`);
# Mistral-7B-Instruct-v0.3 and the other models our `mistral` parser serves have neither token.
# Hy4's parser takes its markers' checkpoint suffix (`:opensource`) from the first structural tag in the
# vocabulary, so its stand-in holds only the suffixed ones, as Hy4's tokenizer does.
_HY4_PLAIN = frozenset(f"<{end}{tag}>" for tag in ("think", "tool_calls", "tool_call", "arg_key", "arg_value")
                       for end in ("", "/"))
WITHOUT: dict[str, frozenset[str]] = {"mistral": frozenset({"[ARGS]", "[CALL_ID]"}), "hy_v4": _HY4_PLAIN}


def build_tokenizer(out_dir: Path, *, without: frozenset[str] = frozenset()) -> Any:
    from transformers import AutoTokenizer

    from tests.helpers.tiny_model import build_tiny_tokenizer

    special, added = special_tokens()
    build_tiny_tokenizer(out_dir, "{{ messages }}", special_tokens=[t for t in special if t not in without],
                         vocab_size=2048)
    tokenizer = AutoTokenizer.from_pretrained(out_dir)
    tokenizer.add_tokens([t for t in added if t not in without], special_tokens=False)
    return tokenizer


def build_tokenizers(out_dir: Path) -> dict[str, Any]:
    """The stand-in tokenizer of each family of ours: "" for every family not in `WITHOUT`."""
    tokenizers = {"": build_tokenizer(out_dir / "all")}
    for family, without in sorted(WITHOUT.items()):
        tokenizers[family] = build_tokenizer(out_dir / family, without=without)
    return tokenizers


@dataclass
class Outcome:
    sample: Sample
    ours: str
    vllm: str | None  # None: vLLM registers no parser of the name ours mirrors
    differs: list[str]  # calls / failure / content, or ["crash"] / ["refused"]
    detail: str = ""

    def row(self) -> dict[str, Any]:
        return {"key": self.sample.key, "ours": self.ours, "vllm": self.vllm, "differs": self.differs,
                "detail": self.detail}


def compare(tokenizers: dict[str, Any], *, skip: set[str] = frozenset()) -> list[Outcome]:
    """Every sample but those in `skip` through both parsers (`tokenizers`: build_tokenizers)."""
    from wtb_local.analysis.commands.parser_comparison import differences
    from wtb_local.formats.parsers import get_parser, parse_completion
    from wtb_local.formats.parsers.vllm_native import VllmParserSetupError, build, registered_names

    registered = registered_names()
    outcomes = []
    for sample in samples():
        if sample.key in skip:
            continue
        ours = our_parser_name(sample)
        full = vllm_parser_name(ours, registered)
        if full is None:
            outcomes.append(Outcome(sample, ours, None, []))
            continue
        name = full.removeprefix("vllm:")
        mine = parse_completion(get_parser(ours, **sample.options), sample.text, tools=sample.tools,
                                finish_reason=sample.finish_reason)
        try:  # the samples are texts as vLLM's server hands them to its parser (its own tests read them so)
            theirs_parser = build(full, tokenizers.get(ours, tokenizers[""]), server_decoded=True, **sample.options)
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


# A named cause starts with its kind (tests/parsers/test_vllm_parity.py writes them so).
KINDS = {"policy: ": "policy", "vLLM bug: ": "vLLM bug", "adapter: ": "adapter"}


def cause_kind(cause: str) -> str:
    """The kind of a named cause: our documented policy, a vLLM bug, or what the vllm: adapter does."""
    found = [kind for prefix, kind in KINDS.items() if cause.startswith(prefix)]
    if not found:
        raise ValueError(f"a cause must start with one of {sorted(KINDS)}: {cause[:80]!r}")
    return found[0]


COLUMNS = ("samples", "same", *KINDS.values(), "not yet examined", "not run")


def counts(outcomes: list[Outcome], named: dict[str, str], not_run: dict[str, str],
           unexamined: frozenset[str] = frozenset()) -> dict[tuple[str, str], list[int]]:
    """Per (our parser, vLLM parser): samples, same result, differences by the kind of their named cause
    (policy / vLLM bug / adapter), differences not yet traced to a cause (`unexamined`), not run (NOT_RUN's
    samples, and every sample of a family the release has no parser for: vLLM parser "-"). Every
    other difference must be named (KeyError)."""
    rows: dict[tuple[str, str], dict[str, int]] = {}
    for outcome in outcomes:
        row = rows.setdefault((outcome.ours, outcome.vllm or "-"), dict.fromkeys(COLUMNS, 0))
        row["samples"] += 1
        if outcome.vllm is None:  # that release has no parser of the family: nothing to compare
            row["not run"] += 1
        elif not outcome.differs:
            row["same"] += 1
        elif outcome.sample.key in unexamined:
            row["not yet examined"] += 1
        else:
            row[cause_kind(named[outcome.sample.key])] += 1
    by_key = {s.key: s for s in samples()}
    for key in not_run:
        ours = our_parser_name(by_key[key])
        row = next(r for (name, _), r in rows.items() if name == ours)
        row["samples"] += 1
        row["not run"] += 1
    return {key: [row[c] for c in COLUMNS] for key, row in rows.items()}


HEAD = ("| our parser | vLLM parser | samples | same | differ: our policy | differ: vLLM bug | differ: vllm: adapter "
        "| differ: not yet examined | not run |")


def render_table(by_version: dict[str, dict[tuple[str, str], list[int]]]) -> str:
    """The parity table of docs/parser-policies.md §4, one column group per vLLM version: each count cell
    holds the versions' counts, "a / b" in the order of the first line (a row a version lacks: "-")."""
    versions = sorted(by_version, key=_version_key)
    lines = [(f"Measured on vLLM {' / '.join(versions)} by `tests/parsers/test_vllm_parity.py` (`scripts/vllm_parity.py` "
             "prints it); each count is per version, in that order."), "", HEAD, "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    keys = sorted({key for rows in by_version.values() for key in rows})
    totals = {v: [0] * len(COLUMNS) for v in versions}
    for key in keys:
        cells = []
        for i in range(len(COLUMNS)):
            cells.append(" / ".join(str(by_version[v][key][i]) if key in by_version[v] else "-" for v in versions))
        for v in versions:
            if key in by_version[v]:
                totals[v] = [a + b for a, b in zip(totals[v], by_version[v][key])]
        lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")
    lines.append("| **all** | | " + " | ".join(
        "**" + " / ".join(str(totals[v][i]) for v in versions) + "**" for i in range(len(COLUMNS))) + " |")
    return "\n".join(lines) + "\n"


def parse_table(text: str) -> dict[str, dict[tuple[str, str], list[int]]]:
    """render_table's text read back (the docs' table), so one version's counts can be checked alone."""
    lines = text.strip("\n").splitlines()
    found = re.match(r"Measured on vLLM (.+?) by ", lines[0])
    if found is None:
        raise ValueError(f"not a parity table: {lines[0][:80]!r}")
    versions = found.group(1).split(" / ")
    by_version: dict[str, dict[tuple[str, str], list[int]]] = {v: {} for v in versions}
    for line in lines[4:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == "**all**":
            continue
        for i, version in enumerate(versions):
            values = [c.split(" / ")[i] for c in cells[2:]]
            if "-" not in values:
                by_version[version][(cells[0], cells[1])] = [int(v) for v in values]
    return by_version


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version.split("+")[0])[:3])


# The subprocess that reads the samples with another vLLM release's Python layer (WTB_VLLM_NEXT): vLLM can be
# imported once per process, so the installed one and the next one are measured in two.
_MEASURE = """
import json, logging, sys, tempfile
from pathlib import Path
logging.disable(logging.CRITICAL)
import vllm
from tests.helpers import vllm_parity
skip = set(json.loads(sys.argv[1]))
with tempfile.TemporaryDirectory() as scratch:
    outcomes = vllm_parity.compare(vllm_parity.build_tokenizers(Path(scratch)), skip=skip)
print(json.dumps({"version": vllm.__version__, "file": vllm.__file__, "outcomes": [o.row() for o in outcomes]}))
"""


def measure_elsewhere(vllm_path: str, skip: set[str], *, timeout: float = 900) -> tuple[str, list[Outcome]]:
    """(vLLM's version, the outcomes) with the vLLM whose `vllm` package lies in `vllm_path` (an unpacked
    wheel's Python layer, first on the path beside this venv's torch), in a subprocess."""
    import os
    import subprocess
    import sys

    repo = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([repo, vllm_path, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _MEASURE, json.dumps(sorted(skip))], capture_output=True,
                          text=True, env=env, cwd=repo, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the parity run with vLLM from {vllm_path} failed (exit {done.returncode}): "
                           f"{done.stderr.strip()[-2000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(report["file"]).resolve().is_relative_to(Path(vllm_path).resolve()):
        raise RuntimeError(f"WTB_VLLM_NEXT={vllm_path}: the subprocess imported vLLM from {report['file']}")
    by_key = {s.key: s for s in samples()}
    return report["version"], [Outcome(by_key[r["key"]], r["ours"], r["vllm"], r["differs"], r["detail"])
                               for r in report["outcomes"]]
