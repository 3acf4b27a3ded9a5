"""Table 6 (task types, task order, task/session accuracy) and Table 7 (orchestration: P/S/S+P accuracy,
AP and OP rates) rows of a metric dict, next to the paper's rows; a rich table on a terminal, aligned
plain text otherwise. Values are percentages with two decimals, as the paper prints them. A row scored from
its tasks is followed by its standard errors (`± se`) and counts (`n`): benchmark/scoring/uncertainty.py,
docs/reports.md "Uncertainty"."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from wtb_local.analysis.reports.columns import AP_RATE, OP_RATE, columns_of, headers_of
from wtb_local.analysis.reports.paper import TABLE6_COLUMNS, TABLE7_COLUMNS, paper_name, paper_rows
from wtb_local.benchmark.scoring.uncertainty import Estimate, estimates, per_session_metrics

# column -> (metric section, bucket, value key), and the printed headers: from the column records
_SOURCES = {table: {c.key: c.source for c in columns_of(f"table{table}")} for table in (6, 7)}
HEADERS = {table: headers_of(f"table{table}") for table in (6, 7)}
COLUMNS = {6: TABLE6_COLUMNS, 7: TABLE7_COLUMNS}


@dataclass
class ReportRow:
    """One table line: a label and its values in % per table (6 and/or 7)."""

    label: str
    values: dict[int, dict[str, float]] = field(default_factory=dict)
    errors: dict[int, dict[str, Estimate]] = field(default_factory=dict)  # per table and column, when known


SE_LABEL = "  ± se"
CI_LABEL = "  95% CI"
N_LABEL = "  n"
UNCERTAINTY_NOTE = (
    "± se: standard error, clustered by session for task figures (tasks of one session fail together), "
    "binomial for session accuracy; 95% CI: Wilson's interval at the clustered effective n (AP: ± 1.96 se); "
    "n: the tasks counted (sessions for session, gold nodes for AP); all in %, docs/reports.md 'Uncertainty'")
DIFF_NOTE = (
    "diff: this row minus the paper's row for the same model, which another harness, checker and sample "
    "produced; a gap within 1.96 se of 0 is inside this run's own noise (the paper gives none of its own)")
TABLE_WIDTH = 120  # the tables' lines fit a 120-column terminal or log: a label takes what the cells leave
LABEL_WIDTH = 40  # the most a label takes; 30 is left at the least (ten ±100.00 cells of a `diff` row)
SHORTENED_NOTE = ("a model label longer than {width} characters is shortened in the tables (…), which fit "
                  f"{TABLE_WIDTH} columns; `--model-name NAME` gives a run a shorter one")


def row_errors(per_session: list[dict[int, dict[str, Any]]],
               metric: dict[str, Any] | None = None) -> dict[int, dict[str, Estimate]]:
    """Each Table 6/7 column's estimate from per-session metric dicts (one run, or its repeats):
    benchmark/scoring/uncertainty.py, the one place `run`, `report`, `explain` and `merge` take them from.
    Given the `metric` shown, a column whose estimate does not reproduce its value gets none (rows that
    were not the ones scored must not lend the row their error)."""
    found = estimates(per_session, {source for table in (6, 7) for source in _SOURCES[table].values()})
    errors = {table: {column: found[source] for column, source in _SOURCES[table].items()} for table in (6, 7)}
    if metric is not None:
        for table in (6, 7):
            shown = metric_values(metric, table)
            for column, estimate in errors[table].items():
                agrees = (math.isnan(shown[column]) and math.isnan(estimate.value)) or \
                    abs(100 * estimate.value - shown[column]) < 1e-6
                if not agrees:
                    errors[table][column] = Estimate(estimate.value, math.nan, math.nan, math.nan, estimate.n,
                                                     estimate.sessions, estimate.method)
    return errors


def scored_errors(score_rows: Sequence[dict[str, Any]] | None, sessions: Sequence[Any] | None,
                  metric: dict[str, Any], checker: str = "strict") -> dict[int, dict[str, Estimate]]:
    """`row_errors` of one run's score rows, judged by `checker`; none without rows."""
    if not score_rows or not sessions:
        return {}
    from wtb_local.benchmark.protocols.checkers import metrics_of  # deferred: start-up

    return row_errors([per_session_metrics(score_rows, sessions, metrics_of(checker))], metric)


def repeated_errors(repeats: Sequence[tuple[Sequence[dict[str, Any]], Sequence[Any]]], metric: dict[str, Any],
                    checker: str = "strict") -> dict[int, dict[str, Estimate]]:
    """`row_errors` of a `--repeats` run's mean row: each repeat's (score rows, sessions), every session's
    counts averaged over the repeats (run-to-run and sampling uncertainty together); none without repeats."""
    if not repeats:
        return {}
    from wtb_local.benchmark.protocols.checkers import metrics_of  # deferred: start-up

    metric_of = metrics_of(checker)
    return row_errors([per_session_metrics(rows, sessions, metric_of) for rows, sessions in repeats], metric)


def metric_values(metric: dict[str, Any], table: int) -> dict[str, float]:
    """Table 6 or 7 values of a metric dict, in %. A bucket without tasks (missing, or a count of 0) reads
    NaN and prints as `-`: the reference writes accuracy 0.0 there, which would read as a real 0%."""
    sources = _SOURCES[table]
    values = {}
    for column, (section, bucket, key) in sources.items():
        entry = metric.get(section, {}).get(bucket)
        total = entry.get("total_count", entry.get("total_step")) if isinstance(entry, dict) else 0
        values[column] = 100.0 * float(entry.get(key, 0.0)) if total else math.nan
    return values


def _cell(value: float, signed: bool = False) -> str:
    if math.isnan(value):
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def diff_row(ours: ReportRow, paper: ReportRow) -> ReportRow:
    """Ours minus the paper's, per table both rows have; labelled `diff: <our label>`."""
    values = {table: {c: ours.values[table][c] - paper.values[table][c] for c in COLUMNS[table]}
              for table in ours.values if table in paper.values}
    return ReportRow(f"diff: {ours.label}", values)


def metric_row(metric: dict[str, Any], label: str | None = None,
               errors: dict[int, dict[str, Estimate]] | None = None) -> ReportRow:
    name = label or str(metric.get("model_name", "model"))
    return ReportRow(name, {6: metric_values(metric, 6), 7: metric_values(metric, 7)}, errors or {})


def _se_cell(estimate: Estimate) -> str:
    return "-" if math.isnan(estimate.se) else f"±{100 * estimate.se:.2f}"


def _ci_cell(estimate: Estimate) -> str:
    if math.isnan(estimate.low):
        return "-"
    return f"{100 * estimate.low:.0f}-{100 * estimate.high:.0f}"


def short_label(label: str, width: int = LABEL_WIDTH) -> str:
    """`label` cut to `width` characters with `…`, keeping its `paper: `/`diff: ` prefix and its trailing
    ` (...)` / ` [...]` qualifiers (they say which row it is); a qualifier too long to keep (a run's folder)
    keeps its end, where two folders of one model differ."""
    if len(label) <= width:
        return label
    prefix = next((p for p in ("paper: ", "diff: ") if label.startswith(p)), "")
    name, tail = label[len(prefix):], ""
    while name.endswith((")", "]")):
        opening = name.rfind(" (" if name.endswith(")") else " [")
        if opening <= 0:
            break
        name, tail = name[:opening], name[opening:] + tail
    room = width - len(prefix) - len(tail) - 1
    if room >= 8:
        return prefix + name[:room] + "…" + tail
    head = prefix + (name if len(prefix) + len(name) <= width // 2 else name[:width // 2 - len(prefix) - 1] + "…")
    keep = width - len(head) - 4  # ` (…` and the closing bracket
    return f"{head} {tail.strip()[0]}…{tail.strip()[-keep - 1:]}"


def label_width(rows: Sequence[ReportRow]) -> int:
    """The labels' width in both tables: LABEL_WIDTH, or less where the widest cells of a table would push its
    lines past TABLE_WIDTH (one width, so a row reads the same in Table 6 and 7)."""
    room = LABEL_WIDTH
    for table in (6, 7):
        lines = [cells for row in rows if table in row.values for cells in _cells(row, table)]
        if lines:
            widths = [max(len(header), *(len(cells[i]) for cells in lines)) for i, header in
                      enumerate(HEADERS[table])]
            room = min(room, TABLE_WIDTH - sum(2 + width for width in widths))
    return room


def shortened(rows: Sequence[ReportRow]) -> bool:
    """Whether a row's label is shortened in the tables (then SHORTENED_NOTE goes with them)."""
    width = label_width(rows)
    return any(short_label(row.label, width) != row.label for row in rows)


def legend_notes(rows: Sequence[ReportRow], tables: Sequence[int] = (6, 7)) -> list[str]:
    """What the HTML's legends say about the printed cells, for the terminal and summary.md: the ± se,
    95% CI and n lines, AP and OP (and what the lenient checker does to them), a `diff` row, a shortened
    label."""
    notes = []
    if any(row.errors for row in rows):
        notes.append(UNCERTAINTY_NOTE)
    if 7 in tables and any(7 in row.values for row in rows):
        notes += [AP_RATE, OP_RATE]
    if any(row.label.startswith("diff: ") for row in rows):
        notes.append(DIFF_NOTE)
    if shortened(rows):
        notes.append(SHORTENED_NOTE.format(width=label_width(rows)))
    return notes


def _n_cell(estimate: Estimate) -> str:
    return str(int(estimate.n)) if float(estimate.n).is_integer() else f"{estimate.n:.1f}"


def _cells(row: ReportRow, table: int) -> list[list[str]]:
    """The cells of a row's printed lines: its values, then its `± se`, `95% CI` and `n` when it has errors."""
    signed = row.label.startswith("diff: ")
    lines = [[_cell(row.values[table][c], signed) for c in COLUMNS[table]]]
    errors = row.errors.get(table)
    if errors:
        lines += [[cell(errors[c]) for c in COLUMNS[table]] for cell in (_se_cell, _ci_cell, _n_cell)]
    return lines


def _lines(row: ReportRow, table: int, width: int) -> list[tuple[str, list[str], str | None]]:
    """The printed lines of a row (label, cells, rich style), its label shortened to `width`."""
    labels = [short_label(row.label, width), SE_LABEL, CI_LABEL, N_LABEL]
    styles = ["dim" if row.label.startswith("paper: ") else None, "dim", "dim", "dim"]
    cells = _cells(row, table)  # one line, or four with errors
    return list(zip(labels[:len(cells)], cells, styles[:len(cells)], strict=True))


def paper_row(model: str, thinking: bool | None = None) -> ReportRow | None:
    """The paper's row for a model id, labelled `paper: <name>`, or None when the paper lacks it."""
    name = paper_name(model, thinking)
    if name is None:
        return None
    values = {}
    for table in (6, 7):
        printed = paper_rows(table).get(name)
        if printed is not None:
            values[table] = {column: float(printed[column]) for column in COLUMNS[table]}
    return ReportRow(f"paper: {name}", values) if values else None


def report_rows(
    metric: dict[str, Any], label: str | None = None, thinking: bool | None = None
) -> list[ReportRow]:
    """Our row, then the paper's row for the same model when the paper has one."""
    ours = metric_row(metric, label)
    paper = paper_row(label or str(metric.get("model_name", "")), thinking)
    return [ours] + ([paper] if paper else [])


def format_plain(rows: Sequence[ReportRow], table: int) -> str:
    """Aligned plain text of the rows that have values for `table`."""
    present = [row for row in rows if table in row.values]
    headers = ("model", *HEADERS[table])
    width = label_width(rows)
    lines = [[label, *cells] for row in present for label, cells, _ in _lines(row, table, width)]
    widths = [max(len(cells[i]) for cells in [list(headers), *lines]) for i in range(len(headers))]

    def join(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        return "  ".join(
            [first, *(cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))]
        )

    title = "Table 6 (accuracy, %)" if table == 6 else "Table 7 (multi-tool accuracy, AP and OP rates, %)"
    return "\n".join([title, join(headers), *(join(cells) for cells in lines)])


def print_tables(
    rows: Sequence[ReportRow],
    tables: Sequence[int] = (6, 7),
    stream: TextIO | None = None,
    width: int | None = None,
) -> None:
    """Print the tables: rich on a terminal wide enough to show every digit, plain text otherwise (pipes,
    files, CI logs, narrow terminals: rich would truncate the numbers)."""
    stream = stream or sys.stdout
    plain = "\n\n".join(format_plain(rows, table) for table in tables) + "\n"
    if not stream.isatty():
        stream.write(plain)
        return
    from rich import box  # deferred: start-up
    from rich.console import Console  # deferred: start-up
    from rich.table import Table  # deferred: start-up

    console = Console(file=stream, width=width)
    if max(len(line) for line in plain.splitlines()) + 4 * len(HEADERS[6]) > console.width:
        stream.write(plain)
        return
    for table in tables:
        title = "Table 6 (accuracy, %)" if table == 6 else "Table 7 (multi-tool accuracy, AP and OP rates, %)"
        grid = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
        grid.add_column("model", no_wrap=True)
        for header in HEADERS[table]:
            grid.add_column(header, justify="right", no_wrap=True)
        for row in rows:
            if table in row.values:
                for label, cells, style in _lines(row, table, label_width(rows)):
                    grid.add_row(label, *cells, style=style)
        console.print(grid)
