"""The roster's report (docs/roster.md §4): the paper's whole Table 6 and 7, every row as printed, each
roster entry's run under its paper row with the difference, and a reproduction summary per entry (task
and session accuracy against the paper, protocol and checker, within ±2 task points or not, length cuts
and parse failures). A roster compared with no paper table (`compare_with = "none"`) gets its own rows
instead, each with its paper row and difference where the paper has one. Built from the presenter's own
pieces (reports.runs, reports.table, reports.health)."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wtb_local.analysis.roster.file import Entry, Roster
from wtb_local.analysis.roster.plan import open_weight_rows

TOLERANCE = 2.0  # task-accuracy points within which a row counts as reproduced
SUMMARY_COLUMNS = ("row", "model", "run", "protocol", "checker", "family", "sessions", "task", "paper task", "task diff",
                   "session", "paper session", "session diff", "within 2", "length cuts", "parse failures %",
                   "status")


@dataclass
class EntryResult:
    entry: Entry
    run: Any = None  # reports.runs.Run, None when the entry has no scored run
    problem: str | None = None

    @property
    def label(self) -> str:
        protocol, checker = getattr(self.run, "protocol", ("release", "strict"))
        return f"{self.entry.row} [{protocol}-{checker}]"


@dataclass
class RosterReport:
    text: str
    summary: list[dict[str, Any]]
    tables: dict[int, list[Any]] = field(default_factory=dict)


def load_entry(entry: Entry, runs_dir: Path) -> EntryResult:
    from wtb_local.analysis.reports.runs import ReportError, label_runs, load_runs  # deferred: start-up
    from wtb_local.benchmark.scoring import ScoringError

    folder = runs_dir / entry.row
    if not folder.is_dir():
        return EntryResult(entry, problem=f"no run directory {folder}")
    try:
        runs = load_runs([folder])
    except (ReportError, ScoringError) as exc:
        return EntryResult(entry, problem=str(exc))
    runs = [run for run in runs if Path(run.source).resolve() == folder.resolve()] or runs
    label_runs(runs)
    return EntryResult(entry, runs[0])


def _cell(value: float | None, signed: bool = False) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def _summary(result: EntryResult) -> dict[str, Any]:
    from wtb_local.analysis.reports.health import run_health  # deferred: start-up
    from wtb_local.analysis.reports.table import metric_values, paper_row

    entry = result.entry
    paper = paper_row(entry.row)
    paper6 = paper.values.get(6, {}) if paper else {}
    line: dict[str, Any] = {"row": entry.row, "model": entry.model, "run": "-", "protocol": entry.protocol,
                            "checker": "-", "family": "-", "sessions": 0, "paper task": paper6.get("task_acc"),
                            "paper session": paper6.get("session_acc"), "task": None, "session": None,
                            "task diff": None, "session diff": None, "within 2": "no run", "length cuts": "-",
                            "parse failures %": None, "status": result.problem or "-"}
    run = result.run
    if run is None:
        return line
    ours = metric_values(run.metric, 6)
    protocol, checker = getattr(run, "protocol", ("release", "strict"))
    health = run_health(run.result_rows, run.score_rows, run.manifest)
    sessions = run.metric.get("total_info", {}).get("session", {}).get("total_count", 0)
    family = run.manifest.protocol.family if run.manifest is not None else None
    if family:  # a paper-protocol run: its family rule, documented or inferred
        line["family"] = f"{family.name} ({'documented' if family.documented else 'inferred'})"
    line.update({"run": str(run.source), "protocol": protocol, "checker": checker, "sessions": sessions,
                 "task": ours["task_acc"], "session": ours["session_acc"],
                 "length cuts": (f"{health['length_steps']} of {health['steps']}"
                                 if health["length_steps"] is not None else "n/a"),
                 "parse failures %": health["parse_failure_pct"], "status": health["status"]})
    if paper6:
        line["task diff"] = ours["task_acc"] - paper6["task_acc"]
        line["session diff"] = ours["session_acc"] - paper6["session_acc"]
        line["within 2"] = "yes" if abs(line["task diff"]) <= TOLERANCE else "no"
    else:
        line["within 2"] = "no paper row"
    return line


def _table_rows(results: dict[str, EntryResult]) -> list[Any]:
    """Every paper row in the paper's order; under each roster row its run (or a `no run` line) and the diff."""
    from wtb_local.analysis.reports.paper import paper_rows
    from wtb_local.analysis.reports.table import COLUMNS, ReportRow, diff_row, metric_row, paper_row

    rows: list[Any] = []
    for name in paper_rows(6):
        paper = paper_row(name)
        if paper is None:
            continue
        rows.append(paper)
        result = results.get(name)
        if result is None:
            continue
        if result.run is None:
            rows.append(ReportRow(f"{name}: no run", {t: {c: math.nan for c in COLUMNS[t]} for t in paper.values}))
            continue
        ours = metric_row(result.run.metric, result.label)
        rows += [ours, diff_row(ours, paper)]
    return rows


def _entry_rows(results: dict[str, EntryResult]) -> list[Any]:
    """A roster compared with no paper table: its rows in roster order, each its run (or a `no run` line),
    then the paper's row and the difference where the paper has a row of that name."""
    from wtb_local.analysis.reports.table import COLUMNS, ReportRow, diff_row, metric_row, paper_row

    rows: list[Any] = []
    for name, result in results.items():
        paper = paper_row(name)
        if result.run is None:
            rows.append(ReportRow(f"{name}: no run", {t: {c: math.nan for c in COLUMNS[t]} for t in (6, 7)}))
            continue
        ours = metric_row(result.run.metric, result.label)
        rows += [ours, paper, diff_row(ours, paper)] if paper else [ours]
    return rows


def build_report(roster: Roster, runs_dir: Path) -> RosterReport:
    from wtb_local.analysis.reports.table import format_plain

    results = {entry.row: load_entry(entry, runs_dir) for entry in roster.entries}
    summary = [_summary(result) for result in results.values()]
    if roster.compare_with != "paper":
        rows = _entry_rows(results)
        ran = sum(1 for result in results.values() if result.run is not None)
        within = sum(1 for line in summary if line["within 2"] == "yes")
        compared = sum(1 for line in summary if line["within 2"] in ("yes", "no"))
        head = [(f"roster {roster.path}: {ran} of {len(results)} entries have a scored run; compared with no paper "
                f"table (compare_with = {roster.compare_with!r}); {within} of {compared} with a paper row within "
                f"±{TOLERANCE:.0f} task-accuracy points of it")]
        head += _partial_note(summary) + _label_note(rows)
        text = "\n\n".join(["\n".join(head), format_plain(rows, 6), format_plain(rows, 7),
                            "Summary\n" + _summary_text(summary)])
        return RosterReport(text, summary, {6: rows, 7: rows})
    rows = _table_rows(results)
    wanted = open_weight_rows()
    matched = [row for row in wanted if row in results and results[row].run is not None]
    within = sum(1 for line in summary if line["within 2"] == "yes")
    compared = sum(1 for line in summary if line["within 2"] in ("yes", "no"))
    head = [(f"roster {roster.path}: {len(matched)} of the paper's {len(wanted)} open-weight rows matched to a run; "
            f"{within} of {compared} within ±{TOLERANCE:.0f} task-accuracy points of the paper")]
    missing = [row for row in wanted if row not in matched]
    if missing:
        head.append(f"open-weight rows without a run: {', '.join(missing)}")
    head += _partial_note(summary) + _label_note(rows)
    text = "\n\n".join(["\n".join(head), format_plain(rows, 6), format_plain(rows, 7),
                        "Reproduction summary\n" + _summary_text(summary)])
    return RosterReport(text, summary, {6: rows, 7: rows})


def _label_note(rows: list[Any]) -> list[str]:
    """The tables' note on shortened labels, as `report` prints it under its tables."""
    from wtb_local.analysis.reports.table import SHORTENED_NOTE, label_width, shortened  # deferred: start-up

    return [f"note: {SHORTENED_NOTE.format(width=label_width(rows))}"] if shortened(rows) else []


def _partial_note(summary: list[dict[str, Any]]) -> list[str]:
    partial = [line["row"] for line in summary if line["run"] != "-" and line["sessions"] != 256]
    if not partial:
        return []
    return [(f"note: {len(partial)} run(s) scored fewer or more than the release's 256 sessions; their rows are "
            "not comparable with the paper's")]


def _summary_text(summary: list[dict[str, Any]]) -> str:
    cells = [[_format(line[c], c) for c in SUMMARY_COLUMNS if c not in ("run", "model")] for line in summary]
    headers = [c for c in SUMMARY_COLUMNS if c not in ("run", "model")]
    widths = [max(len(str(x[i])) for x in [headers, *cells]) for i in range(len(headers))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip() for line in [headers, *cells])


def _format(value: Any, column: str) -> str:
    if isinstance(value, float) or value is None:
        return _cell(value, signed=column.endswith("diff"))
    return str(value)


def write_report(report: RosterReport, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    markdown = out / "roster_report.md"
    markdown.write_text("# Roster report\n\n```\n" + report.text + "\n```\n", encoding="utf-8")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for line in report.summary:
        writer.writerow({k: (f"{v:.2f}" if isinstance(v, float) else v) if v is not None else "" for k, v in line.items()})
    summary = out / "reproduction.csv"
    summary.write_text(buffer.getvalue(), encoding="utf-8")
    return [markdown, summary]
