"""Protocol labels and notes for `report`: every run row says which protocol and argument checker
produced it (a legend line for all; rows other than the default release/strict also in their label,
`model [paper-lenient]`); a run's re-scorings (`rescore`, `RUN/score-<checker>/`) are shown
next to it; a note splits a run's gap to the paper into the checker's part and the rest, and says when a
paper-protocol family rule is inferred rather than documented."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wtb_local.protocols import default_scoring, find_protocol
from wtb_local.scoring.files import METRIC_FILE_NAME

PAPER_PROTOCOL_NOTE = ("the paper's open-model rows come from the authors' older harness (per-family prompts, "
                       "transformers generate, lenient argument checker): --protocol paper reproduces it")


def paper_row_note(protocol: str) -> str:
    """The line printed under the paper's row by the main job."""
    return f"note: this run: --protocol {protocol}; {PAPER_PROTOCOL_NOTE}."


def _section(manifest: Any) -> dict[str, Any]:
    section = manifest.get("protocol") if isinstance(manifest, dict) else None
    return section if isinstance(section, dict) else {}


def run_protocol(run_dir: str | Path) -> tuple[str, str]:
    """(protocol, checker) of a run directory from its manifest; a run without the key is release/strict."""
    try:
        manifest = json.loads((Path(run_dir) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = None
    section = _section(manifest)
    return str(section.get("name", "release")), str(section.get("checker", "strict"))


def rescored_metrics(run_dir: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """(checker, metric) of every `score-<checker>/score/<model>/Wild-Tool-Bench_metric.json` in a run
    directory (what `rescore` writes)."""
    found = []
    for path in sorted(Path(run_dir).glob(f"score-*/score/*/{METRIC_FILE_NAME}")):
        found.append((path.parents[2].name[len("score-"):], json.loads(path.read_text(encoding="utf-8"))))
    return found


def protocol_label(name: str, protocol: str, checker: str) -> str:
    """`model [release-strict]`: every report row says which protocol and checker produced it."""
    return f"{name} [{protocol}-{checker}]"


def _base_dir(run: Any) -> Path:
    """The run directory a loaded run belongs to (a re-scoring's is its parent)."""
    return Path(run.source).parent if _section(run.manifest).get("rescore_of") else Path(run.source)


def label_runs(runs: list[Any]) -> None:
    """Label each loaded report run with its protocol and checker (in place). Runs scored with the lenient
    checker take their own metric file: re-counting their labels with the release metric would lose the
    harness's buckets, AP and OP."""
    bases: dict[str, set[Path]] = {}
    for run in runs:
        bases.setdefault(run.model_name, set()).add(_base_dir(run))
    for run in runs:
        section = _section(run.manifest)
        if run.manifest is None and isinstance(run.metric.get("protocol"), dict):  # a lenient metric file alone
            section = {"name": "paper?", **run.metric["protocol"]}
        protocol, checker = str(section.get("name", "release")), str(section.get("checker", "strict"))
        metric_file = Path(run.source) / "score" / run.model_name / METRIC_FILE_NAME
        if checker == "lenient" and metric_file.is_file():
            run.metric = json.loads(metric_file.read_text(encoding="utf-8"))
        run.protocol = (protocol, checker)
        name = run.model_name if len(bases[run.model_name]) == 1 else f"{run.model_name} ({_base_dir(run)})"
        if (protocol, checker) == default_scoring() and not section.get("rescore_of"):
            if len(bases[run.model_name]) == 1:
                run.label = name  # one run directory: its re-scorings do not need paths to tell them apart
            continue  # the default keeps a plain label (the legend line names it)
        run.label = protocol_label(name, protocol, checker)


def protocol_legend(runs: list[Any]) -> str:
    """One line naming every row's protocol and checker (plain labels are release, strict checker)."""
    parts = []
    for run in runs:
        protocol, checker = getattr(run, "protocol", default_scoring())
        parts.append(f"{run.label} = {protocol}, {checker} checker")
    return "protocols: " + "; ".join(parts)


def gap_note(path: str | Path, name: str, metric: dict[str, Any], paper_task_acc: float) -> str | None:
    """One line splitting a run's task-accuracy gap to the paper's row into the argument checker's part
    (lenient minus strict, from `rescore`) and the rest (prompts, generation, sampling, parse rules); None
    when the run has not been scored with both checkers."""
    if not Path(path).is_dir():
        return None
    protocol, checker = run_protocol(path)
    by_checker = {checker: metric, **dict(rescored_metrics(path))}
    if not {"strict", "lenient"} <= set(by_checker):
        return None
    strict, lenient = (100.0 * float(by_checker[c]["total_info"]["task"]["accuracy"]) for c in ("strict", "lenient"))
    return (f"gap to the paper ({name}, --protocol {protocol}, task accuracy): {protocol}-strict {strict:.2f}, "
            f"{protocol}-lenient {lenient:.2f} (checker: {lenient - strict:+.2f}); paper {paper_task_acc:.2f} "
            f"(the rest: {paper_task_acc - lenient:+.2f}, prompts/generation/sampling/parse rules"
            f"{'' if getattr(find_protocol(protocol), 'reproduces_paper', False) else ' — run --protocol paper to measure them'})")


def inferred_note(path: str | Path, name: str) -> str | None:
    """A line for a paper-protocol run whose family rule is inferred, not documented by the harness."""
    try:
        section = _section(json.loads((Path(path) / "manifest.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
    # only a paper-protocol section names a family rule
    if "family" not in section or section.get("documented", True) or section.get("rescore_of"):
        return None
    family = section.get("family") or {}
    return (f"note: {name}: the paper-protocol rule `{family.get('name')}` is inferred, not documented by the "
            f"paper's harness ({family.get('source')})")


def protocol_notes(runs: list[Any], paper: bool) -> list[str]:
    """The report's protocol lines: every row's protocol, inferred family rules, and gap splits for runs
    the paper has."""
    from wtb_local.reports import paper_row

    defaults = all(getattr(run, "protocol", default_scoring()) == default_scoring() for run in runs)
    notes = [] if defaults else [protocol_legend(runs)]  # release/strict only: plain labels say it
    for run in runs:
        if _section(run.manifest).get("rescore_of") or not Path(run.source).is_dir():
            continue
        inferred = inferred_note(run.source, run.model_name)
        if inferred:
            notes.append(inferred)
        known = (paper_row(run.model_id, run.thinking) or paper_row(run.model_name, run.thinking)) if paper else None
        if known is not None:
            note = gap_note(run.source, run.model_name, run.metric, known.values[6]["task_acc"])
            if note:
                notes.append(note)
    return notes
