"""One presenter: what every command shows for a run directory (docs/outputs-and-reports.md).

`run`, `run --repeats`, `merge`, `score`, `rescore` and `report` all read a run through `run_facts` (model,
protocol, checker, the recorded effective thinking mode, dataset: from the manifest) and show it with
`row_label` (the row's label), `paper_row_of` (the paper's row: model and recorded thinking mode) and
`run_notes` (what a reader must know before comparing). `present` puts them together for the commands
that show one run. Imports no torch, vllm or transformers.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from wtb_local.analysis.reports.table import (
    ReportRow,
    legend_notes,
    metric_row,
    paper_row,
    repeated_errors,
    scored_errors,
)
from wtb_local.benchmark.protocols import find_protocol, protocol_named
from wtb_local.contract.manifest import Manifest
from wtb_local.contract.run_dir import RunDir, as_manifest

RELEASE_SESSIONS = 256
DEFAULT_SCORING = ("release", "strict")
PAPER_PROTOCOL_NOTE = ("the paper's open-model rows come from the authors' older harness (per-family prompts, "
                       "transformers generate, lenient argument checker): --protocol paper reproduces it")


@dataclass(frozen=True)
class RunFacts:
    """What a run's manifest says about how to show it."""

    model_id: str
    name: str  # the metric file's model name (`/` as `_`), the base of every label
    protocol: str = "release"
    checker: str = "strict"
    thinking: bool | None = None  # the recorded effective mode (run/setup/thinking.py), else what was asked
    dataset: str | None = None  # as the run was given it (`sample`, `release` or a path)
    rescore: bool = False  # a re-scoring of a run (`rescore`), not the run's own scoring
    family: dict[str, Any] | None = None  # the paper protocol's family rule
    documented: bool = True  # False: the family rule is inferred, not documented by the harness
    thinking_evidence: str | None = None  # why the manifest records the mode it does (or none)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def read_run_manifest(path: str | Path) -> Manifest | None:
    """The manifest of a run directory, else of the first repeat of a `--repeats` run; None when neither
    has one. ManifestError (one line) for one that is unreadable or does not validate (contract/run_dir.py)."""
    found = RunDir(Path(path))
    if found.manifest is not None:
        return found.manifest
    repeats = found.repeats()
    return repeats[0].manifest if repeats else None


def run_facts(manifest: Manifest | dict[str, Any] | None, *, name: str | None = None, checker: str | None = None,
              thinking: bool | None = None) -> RunFacts:
    """The facts of a run from its manifest. `name` stands in for a run without one (a harness output
    folder, a loose file); `checker` is the checker that scored what is shown when it is not the run's
    own (`rescore`); `thinking` (the `--thinking` flag) counts only where the manifest records no mode."""
    from wtb_local.analysis.reports.thinking_labels import recorded_thinking  # deferred: start-up
    from wtb_local.benchmark.scoring.files import model_dir_name

    manifest = as_manifest(manifest) or Manifest()
    section = manifest.protocol
    model_id = str(manifest.model_id or name or "model")
    recorded_name = manifest.model_name
    shown_name = model_dir_name(str(recorded_name)) if recorded_name else str(name or model_id)
    protocol = manifest.protocol_name or "release"
    own_checker = str(section.checker or (find_protocol(protocol) or protocol_named(None)).checker)
    mode = recorded_thinking(manifest)
    if mode is None:
        mode = manifest.settings.thinking if manifest.settings.thinking is not None else thinking
    dataset = manifest.dataset_source
    evidence = manifest.thinking.evidence
    return RunFacts(model_id=model_id, name=shown_name, protocol=protocol, checker=checker or own_checker,
                    thinking=mode, dataset=str(dataset) if dataset else None,
                    rescore=bool(section.rescore_of) or (checker is not None),
                    family=section.family.written() or None, documented=section.documented is not False,
                    thinking_evidence=str(evidence) if evidence else None)


def row_label(facts: RunFacts, qualifier: str | None = None) -> str:
    """`name`, `name (qualifier)`, then ` [protocol-checker]` for every scoring but a run's own
    release/strict one: a re-scoring or another protocol or checker always says which."""
    label = facts.name + (f" ({qualifier})" if qualifier else "")
    if (facts.protocol, facts.checker) != DEFAULT_SCORING or facts.rescore:
        label += f" [{facts.protocol}-{facts.checker}]"
    return label


def _paper_row(facts: RunFacts, thinking: bool | None) -> ReportRow | None:
    return paper_row(facts.model_id, thinking) or paper_row(facts.name, thinking)


def row_thinking(facts: RunFacts) -> tuple[bool | None, str | None]:
    """The thinking mode that picks the paper's row, and why when the run records none: a run that
    rendered no prompt (the oracle without a tokenizer, scripted replies) is compared as its model's chat
    template behaves without a switch, as the same command line on an engine would run (README, "The main
    job on a GPU"). Files without a run manifest keep the mode their name or `--thinking` gives."""
    if facts.thinking is not None or facts.thinking_evidence is None:
        return facts.thinking, None  # recorded; or no run record: the name decides (`Qwen3-8B-Thinking`)
    from wtb_local.analysis.reports.thinking_labels import template_default  # deferred: start-up

    default = template_default(facts.model_id) or template_default(facts.name)
    if default is None:
        return None, None
    return default


def paper_row_of(facts: RunFacts) -> ReportRow | None:
    """The paper's row for the run's model and thinking mode (Qwen3 has two rows), or None: the recorded
    mode, else the model's template default (`row_thinking`)."""
    return _paper_row(facts, row_thinking(facts)[0])


def row_choice_note(facts: RunFacts) -> str | None:
    """Which paper row a run without a recorded thinking mode is compared with, and why; None where the mode
    is recorded or does not decide the row."""
    thinking, why = row_thinking(facts)
    if why is None:
        return None
    chosen = _paper_row(facts, thinking)
    other = _paper_row(facts, not thinking)
    if chosen is None or other is None or chosen.label == other.label:
        return None
    name, other_name = chosen.label.removeprefix("paper: "), other.label.removeprefix("paper: ")
    flag = "--thinking" if not thinking else "--no-thinking"
    return (f"paper row {name}: the run records no thinking mode (its manifest says: {facts.thinking_evidence}); "
            f"compared as its model's chat template behaves without a switch: {why} ({flag}: {other_name})")


def inferred_note(facts: RunFacts) -> str | None:
    # only a protocol that reproduces the paper's harness has family rules, documented or inferred
    if not getattr(find_protocol(facts.protocol), "reproduces_paper", False) or facts.documented or facts.rescore:
        return None
    family = facts.family or {}
    return (f"the paper-protocol rule `{family.get('name')}` is inferred, not documented by the paper's harness "
            f"({family.get('source')})")


def sessions_note(facts: RunFacts, metric: dict[str, Any]) -> str | None:
    """A run over other sessions than the release's 256 is not comparable with the paper's row."""
    sessions = _dict(_dict(metric.get("total_info")).get("session")).get("total_count", 0)
    sessions = int(sessions) if isinstance(sessions, float) and sessions.is_integer() else sessions  # a mean
    if sessions == RELEASE_SESSIONS:
        return None
    where = f" (dataset: {facts.dataset})" if facts.dataset else ""
    if sessions > RELEASE_SESSIONS:
        return (f"{sessions} sessions were scored{where}, not the release's {RELEASE_SESSIONS}; the paper's row "
                "is over the release.")
    return (f"{sessions} of the release's {RELEASE_SESSIONS} sessions were scored{where}; the paper's row is "
            f"over all {RELEASE_SESSIONS}.")


def run_notes(facts: RunFacts, metric: dict[str, Any], *, paper_shown: bool,
              protocol_note: bool = True) -> list[str]:
    """What a reader must know about one run before comparing it (each printed after `note: `); the
    protocol line is left to `report`'s legend there (`protocol_note=False`)."""
    notes = [f"this run: --protocol {facts.protocol}; {PAPER_PROTOCOL_NOTE}."] if paper_shown and protocol_note \
        else []
    row_note = row_choice_note(facts) if paper_shown else None
    if row_note:
        notes.append(row_note)
    inferred = inferred_note(facts)
    if inferred:
        notes.append(inferred)
    partial = sessions_note(facts, metric) if paper_shown else None
    if partial:
        notes.append(partial)
    return notes


@dataclass
class Presentation:
    """One run as a command shows it: its label, our row then the paper's, notes, and extra lines."""

    facts: RunFacts
    label: str
    rows: list[ReportRow]
    notes: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # printed last (the ± line of a repeats run)

    def show(self, stream: TextIO | None = None) -> None:
        from wtb_local.analysis.reports.table import print_tables

        stream = stream or sys.stdout
        print_tables(self.rows, stream=stream)
        for note in self.notes:
            stream.write(f"note: {note}\n")
        for line in self.lines:
            stream.write(line + "\n")


def present(run_dir: str | Path | None, metric: dict[str, Any], *, manifest: Manifest | dict[str, Any] | None = None,
            name: str | None = None, checker: str | None = None, thinking: bool | None = None,
            paper: bool = True, score_rows: list[dict[str, Any]] | None = None,
            sessions: list[Any] | None = None,
            repeats: list[tuple[list[dict[str, Any]], list[Any]]] | None = None) -> Presentation:
    """A run directory (its manifest) and the metric shown for it -> label, rows and notes. A `--repeats`
    run (`repeats.json`) is shown as the mean of its repeats, with the ± line. With the score rows the
    metric was counted from (and the dataset's sessions), our row carries its standard errors and n; a
    `--repeats` run's mean row carries them with each repeat's (score rows, sessions) as `repeats`."""
    from wtb_local.analysis.commands.repeat_runs import error_bar_line, read_summary  # deferred: start-up

    manifest = as_manifest(manifest)  # a run's own (a dict it wrote) or one read
    if manifest is None and run_dir is not None:
        manifest = read_run_manifest(run_dir)
    facts = run_facts(manifest, name=name or str(metric.get("model_name") or "") or None, checker=checker,
                      thinking=thinking)
    summary = read_summary(run_dir) if run_dir is not None else None
    lines: list[str] = []
    if summary is not None:
        metric = summary["mean_metric"]
        label = row_label(facts, f"mean of {summary['repeats']}")
        lines.append(error_bar_line(row_label(facts), summary))
    else:
        label = row_label(facts)
    known = paper_row_of(facts) if paper else None
    errors = scored_errors(score_rows, sessions, metric, facts.checker) if summary is None else \
        repeated_errors(repeats or [], metric, facts.checker)
    rows = [metric_row(metric, label, errors)] + ([known] if known else [])
    notes = legend_notes(rows) + run_notes(facts, metric, paper_shown=known is not None)
    if run_dir is not None:  # a manifest that says running: still running, or its process died
        from wtb_local.analysis.reports.run_status import status_note  # deferred: start-up

        said = status_note(run_dir, manifest)
        notes = ([said] if said else []) + notes
    return Presentation(facts, label, rows, notes, lines)

