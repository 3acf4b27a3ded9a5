"""What every report column means, said on the page where it appears (a legend under each table and a hover
title on each header). Keyed by the column's key in its `Section`; a section may add its own (explain's
tables). The fixed columns' sentences are their records' (analysis/reports/columns.py); here are those of
the columns the data decides (transitions, error labels, format deviation kinds)."""

from __future__ import annotations

from wtb_local.analysis.reports.columns import REPORT_COLUMNS
from wtb_local.benchmark.scoring.taxonomy import LABELS, PAPER_COLUMNS

_ACCURACY = "% of {what} judged correct"

COLUMN_DEFINITIONS: dict[str, str] = {
    # the fixed columns (Table 6/7, hidden intention, run health, versions): their records' sentences
    **{column.key: column.definition for column in REPORT_COLUMNS},
    # transitions (Figure 7)
    **{f"t{n}": _ACCURACY.format(what=f"tasks with {n} task-type change(s) in the session up to them")
       for n in range(4)},
    **{f"n{n}": f"tasks with {n} task-type change(s) in the session up to them (a count)" for n in range(4)},
    # error categories
    "failed": "failed tasks (a count); the other columns are % of these",
    **{label: f"% of failed tasks whose first failure is {label} (docs/outputs-and-reports.md)" for label in LABELS},
    **{column: f"% of failed tasks labelled {' or '.join(labels)}" for column, labels in PAPER_COLUMNS.items()},
    # format deviations
    "calls": "tool calls written outside the format (not executed)",
    "fenced_json": "steps with a ``` block holding a JSON call",
    "bare_json": "steps with a JSON call in the text",
}


def definition(key: str) -> str | None:
    """The column's sentence; `format:<parser>` columns are another family's format."""
    if key.startswith("format:"):
        return f"steps with calls in the {key[7:]} parser's format, another family's"
    return COLUMN_DEFINITIONS.get(key)
