"""Table 6 (task types, task order, task/session accuracy) and Table 7 (orchestration: P/S/S+P accuracy,
AP and OP rates) rows of a metric dict, next to the paper's rows; a rich table on a terminal, aligned
plain text otherwise. Values are percentages with two decimals, as the paper prints them."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from wtb_local.analysis.reports.columns import columns_of, headers_of
from wtb_local.analysis.reports.paper import TABLE6_COLUMNS, TABLE7_COLUMNS, paper_name, paper_rows

# column -> (metric section, bucket, value key), and the printed headers: from the column records
_SOURCES = {table: {c.key: c.source for c in columns_of(f"table{table}")} for table in (6, 7)}
HEADERS = {table: headers_of(f"table{table}") for table in (6, 7)}
COLUMNS = {6: TABLE6_COLUMNS, 7: TABLE7_COLUMNS}


@dataclass
class ReportRow:
    """One table line: a label and its values in % per table (6 and/or 7)."""

    label: str
    values: dict[int, dict[str, float]] = field(default_factory=dict)


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


def metric_row(metric: dict[str, Any], label: str | None = None) -> ReportRow:
    name = label or str(metric.get("model_name", "model"))
    return ReportRow(name, {6: metric_values(metric, 6), 7: metric_values(metric, 7)})


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
    lines = [[row.label, *(_cell(row.values[table][c], row.label.startswith("diff: ")) for c in COLUMNS[table])]
             for row in present]
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
                style = "dim" if row.label.startswith("paper: ") else None
                signed = row.label.startswith("diff: ")
                grid.add_row(row.label, *(_cell(row.values[table][c], signed) for c in COLUMNS[table]),
                             style=style)
        console.print(grid)
