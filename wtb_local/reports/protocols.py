"""Protocol labels for report rows, and the rows of a run's re-scorings (`rescore`): one run shown as
release-strict and release-lenient (or paper-lenient and paper-strict), so a gap to the paper splits into
the checker's part and the prompt/generation part."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PAPER_PROTOCOL_NOTE = ("the paper's open-model rows come from the authors' older harness (per-family prompts, "
                       "transformers generate, lenient argument checker): --protocol paper reproduces it")


def paper_row_note(protocol: str) -> str:
    """The line printed under the paper's row by the main job."""
    return f"note: this run: --protocol {protocol}; {PAPER_PROTOCOL_NOTE}."


def run_protocol(run_dir: str | Path) -> tuple[str, str]:
    """(protocol, checker) of a run directory from its manifest; a run without the key is release/strict."""
    path = Path(run_dir) / "manifest.json"
    try:
        section = json.loads(path.read_text(encoding="utf-8")).get("protocol") or {}
    except (OSError, ValueError, AttributeError):
        section = {}
    return str(section.get("name", "release")), str(section.get("checker", "strict"))


def rescored_metrics(run_dir: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """(checker, metric) of every `score-<checker>/score/<model>/Wild-Tool-Bench_metric.json` in a run
    directory (what `rescore` writes)."""
    found = []
    for path in sorted(Path(run_dir).glob("score-*/score/*/Wild-Tool-Bench_metric.json")):
        checker = path.parents[2].name[len("score-"):]
        found.append((checker, json.loads(path.read_text(encoding="utf-8"))))
    return found


def protocol_label(name: str, protocol: str, checker: str) -> str:
    """`model [release-strict]`: every report row says which protocol and checker produced it."""
    return f"{name} [{protocol}-{checker}]"


def protocol_rows(path: str | Path, name: str, metric: dict[str, Any]) -> list[Any]:
    """The report rows of one path: the run labelled with its protocol and checker, then its re-scorings."""
    from wtb_local.reports.table import metric_row

    if not Path(path).is_dir():
        return [metric_row(metric, name)]
    protocol, checker = run_protocol(path)
    rows = [metric_row(metric, protocol_label(name, protocol, checker))]
    for other, rescored in rescored_metrics(path):
        if other != checker:
            rows.append(metric_row(rescored, protocol_label(name, protocol, other)))
    return rows


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
            f"{'' if protocol == 'paper' else ' — run --protocol paper to measure them'})")


def inferred_note(path: str | Path, name: str) -> str | None:
    """A line for a paper-protocol run whose family rule is inferred, not documented by the harness."""
    try:
        section = json.loads((Path(path) / "manifest.json").read_text(encoding="utf-8")).get("protocol") or {}
    except (OSError, ValueError, AttributeError):
        return None
    if section.get("name") != "paper" or section.get("documented", True):
        return None
    family = section.get("family") or {}
    return (f"note: {name}: the paper-protocol rule `{family.get('name')}` is inferred, not documented by the "
            f"paper's harness ({family.get('source')})")
