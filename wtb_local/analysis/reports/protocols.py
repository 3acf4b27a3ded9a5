"""Protocol lines of `report` (docs/outputs-and-reports.md): a legend naming every row's protocol and
argument checker (when any row is not a run's own release/strict scoring), and one gap line per paper row
that splits the distance between the report's runs of that model and the paper's row into the argument
checker's part (lenient minus strict, from `rescore`), the protocol's part (`--protocol paper` minus
release, same checker) and the rest. Every run in the report is seen: a release run and a paper run of
one model make one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wtb_local.benchmark.protocols import protocol_named, protocol_names
from wtb_local.contract.run_dir import RunDir

# the protocol that reproduces the paper's harness (benchmark/protocols/paper.py)
PAPER = next(name for name in protocol_names() if protocol_named(name).reproduces_paper)
_ORDER = (("release", "strict"), ("release", "lenient"), ("paper", "strict"), ("paper", "lenient"))


def rescored_metrics(run_dir: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """(checker, metric) of every `score-<checker>/score/<model>/Wild-Tool-Bench_metric.json` in a run
    directory (what `rescore` writes)."""
    return [(scored.checker, json.loads(scored.metric_file.read_text(encoding="utf-8")))
            for scored in RunDir(Path(run_dir)).score_sets() if scored.checker is not None]


def protocol_legend(runs: list[Any]) -> str:
    """One line naming every row's protocol and checker (plain labels are release, strict checker)."""
    parts = [f"{run.label} = {run.facts.protocol}, {run.facts.checker} checker" for run in runs]
    return "protocols: " + "; ".join(parts)


def _task_accuracy(metric: dict[str, Any]) -> float:
    return 100.0 * float(metric["total_info"]["task"]["accuracy"])


def gap_line(name: str, scorings: dict[tuple[str, str], float], paper_task_acc: float) -> str | None:
    """One line splitting the task-accuracy gap between a model's scorings (protocol, checker) and the
    paper's row; None with fewer than two scorings (nothing to split)."""
    shown = [key for key in _ORDER if key in scorings]
    if len(shown) < 2:
        return None
    protocols = [p for p in ("release", "paper") if any(key[0] == p for key in shown)]
    groups = []
    for protocol in protocols:
        keys = [key for key in shown if key[0] == protocol]
        parts = []
        if len(keys) == 2:
            parts.append(f"checker: {scorings[(protocol, 'lenient')] - scorings[(protocol, 'strict')]:+.2f}")
        if protocol == PAPER and len(protocols) == 2:
            same = [c for c in ("lenient", "strict") if ("release", c) in scorings and ("paper", c) in scorings]
            if same:
                parts.append(f"protocol: {scorings[('paper', same[0])] - scorings[('release', same[0])]:+.2f}")
            else:
                last_release = [key for key in shown if key[0] == "release"][-1]
                parts.append(f"protocol and checker: {scorings[keys[0]] - scorings[last_release]:+.2f}")
        text = ", ".join(f"{p}-{c} {scorings[(p, c)]:.2f}" for p, c in keys)
        groups.append(text + (f" ({'; '.join(parts)})" if parts else ""))
    closest = scorings[shown[-1]]
    hint = "" if PAPER in protocols else " — run --protocol paper to measure them"
    return (f"gap to the paper ({name}, --protocol {' and '.join(protocols)}, task accuracy): "
            f"{'; '.join(groups)}; paper {paper_task_acc:.2f} (the rest: {paper_task_acc - closest:+.2f}, "
            f"prompts/generation/sampling/parse rules{hint})")


def gap_notes(runs: list[Any], paper: bool) -> list[str]:
    """Gap lines over every run of the report: per paper row, the scorings of all its runs (their own
    and their re-scorings). Two run directories with the same protocol and checker for one paper row
    cannot be combined: each then gets its own line."""
    from wtb_local.analysis.reports.present import paper_row_of  # deferred: start-up

    if not paper:
        return []
    # paper row label -> run directory -> (protocol, checker) -> task accuracy
    groups: dict[str, dict[Path, dict[tuple[str, str], float]]] = {}
    named: dict[str, tuple[str, float]] = {}
    for run in runs:
        if run.summary is not None or not Path(run.source).is_dir():
            continue
        known = paper_row_of(run.facts)
        if known is None or 6 not in known.values:
            continue
        named.setdefault(known.label, (run.facts.name, known.values[6]["task_acc"]))
        scorings = groups.setdefault(known.label, {}).setdefault(run.base, {})
        scorings[(run.facts.protocol, run.facts.checker)] = _task_accuracy(run.metric)
        if not run.facts.rescore:
            for checker, metric in rescored_metrics(run.source):
                scorings.setdefault((run.facts.protocol, checker), _task_accuracy(metric))
    notes = []
    for label, by_base in groups.items():
        keys = [key for scorings in by_base.values() for key in scorings]
        combined = len(keys) == len(set(keys))
        parts = [{k: v for scorings in by_base.values() for k, v in scorings.items()}] if combined \
            else list(by_base.values())
        name, paper_task_acc = named[label]
        for scorings in parts:
            line = gap_line(name, scorings, paper_task_acc)
            if line:
                notes.append(line)
    return notes


def protocol_notes(runs: list[Any], paper: bool) -> list[str]:
    """The report's protocol lines: the legend (unless every row is a run's own release/strict scoring,
    which plain labels say) and the gap lines."""
    from wtb_local.analysis.reports.present import DEFAULT_SCORING  # deferred: start-up

    plain = all((run.facts.protocol, run.facts.checker) == DEFAULT_SCORING and not run.facts.rescore
                for run in runs)
    return ([] if plain else [protocol_legend(runs)]) + gap_notes(runs, paper)
