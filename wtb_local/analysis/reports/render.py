"""Sections as aligned plain text (terminal), Markdown, CSV files and JSON."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

from wtb_local.analysis.reports.sections import Section, format_value


def _cells(section: Section, row: dict[str, Any]) -> list[str]:
    return [row["label"], *(format_value(row.get(key), row.get("kind", "ours"), section.percent)
                            for key, _ in section.columns)]


def section_plain(section: Section) -> str:
    headers = [section.label_header, *(header for _, header in section.columns)]
    lines = [_cells(section, row) for row in section.rows]
    widths = [max(len(cells[i]) for cells in [headers, *lines]) for i in range(len(headers))]

    def join(cells: Sequence[str]) -> str:
        return "  ".join([cells[0].ljust(widths[0]),
                          *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))]).rstrip()

    text = [section.title, join(headers), *(join(cells) for cells in lines)]
    if section.note:
        text.append(f"note: {section.note}")
    return "\n".join(text)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def section_markdown(section: Section) -> str:
    headers = [section.label_header, *(header for _, header in section.columns)]
    lines = [f"### {section.title}", "", "| " + " | ".join(_md_escape(h) for h in headers) + " |",
             "|" + "---|" + "---:|" * len(section.columns)]
    for row in section.rows:
        cells = [_md_escape(c) for c in _cells(section, row)]
        if row.get("kind") == "paper":
            cells[0] = f"*{cells[0]}*"
        lines.append("| " + " | ".join(cells) + " |")
    if section.note:
        lines += ["", section.note]
    return "\n".join(lines)


def report_markdown(sections: Sequence[Section], plots: Sequence[str] = (), notes: Sequence[str] = (),
                    title: str = "WildToolBench report") -> str:
    parts = [f"# {title}", ""]
    parts += [f"- {note}" for note in notes]
    if notes:
        parts.append("")
    for section in sections:
        parts += [section_markdown(section), ""]
    if plots:
        parts += ["## Plots", ""] + [f"![{name}](plots/{name})" for name in plots] + [""]
    return "\n".join(parts)


def section_csv(section: Section) -> str:
    """One CSV per section: model, kind, then the columns by key; numbers unrounded, empty = no value."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([section.label_header, "kind", *(key for key, _ in section.columns)])
    for row in section.rows:
        writer.writerow([row["label"], row.get("kind", "ours"),
                         *(_csv_value(row.get(key)) for key, _ in section.columns)])
    return out.getvalue()


def _csv_value(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, float):
        return round(value, 4)
    return value


def report_json(sections: Sequence[Section], runs: Sequence[Any]) -> str:
    data = {
        "runs": [{"label": run.label, "model_name": run.model_name, "model_id": run.model_id,
                  "source": str(run.source), "tasks": len(run.tasks), "note": run.note} for run in runs],
        "sections": [{"key": s.key, "title": s.title, "note": s.note,
                      "columns": [{"key": k, "header": h} for k, h in s.columns],
                      "rows": [{k: _json_value(v) for k, v in row.items()} for row in s.rows]}
                     for s in sections],
    }
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
