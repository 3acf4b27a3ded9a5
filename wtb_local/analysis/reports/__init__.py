"""Reports: the paper's Table 6 / Table 7 rows of scored runs, next to the paper's own rows.

- `report_rows(metric, label=None, thinking=None)`, `print_tables(rows)`, `format_plain(rows, table)`
- `paper_name(model_id, thinking=None)`, `paper_rows(table)`: the paper's names and printed values
- present.py: what every command shows for a run directory (label, paper row by the recorded thinking
  mode, notes; docs/outputs-and-reports.md)
- the full report (runs.py -> sections.py -> render.py / plots.py / html.py) is driven by
  `wtb_local.analysis.reports.build.write_report`; imported lazily by the `report` command
"""

from __future__ import annotations

from wtb_local.analysis.reports.paper import paper_name, paper_rows
from wtb_local.analysis.reports.table import (
    ReportRow,
    diff_row,
    format_plain,
    metric_row,
    metric_values,
    paper_row,
    print_tables,
    report_rows,
)

__all__ = [
    "ReportRow",
    "diff_row",
    "format_plain",
    "metric_row",
    "metric_values",
    "paper_name",
    "paper_row",
    "paper_rows",
    "print_tables",
    "report_rows",
]
