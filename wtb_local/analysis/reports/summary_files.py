"""The printed tables kept in the run directory: `summary.md` (as printed) and `summary.json` (as data)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wtb_local.analysis.reports.table import COLUMNS, HEADERS
from wtb_local.contract.paths import SUMMARY_JSON, SUMMARY_MD


def write_summary(run_dir: Path, rows: list[Any], tables_text: str, notes: list[str],
                  health: Sequence[str] = ()) -> tuple[Path, Path]:
    """The tables as printed (`summary.md`) and as data (`summary.json`: per row its label and values in %,
    null for an empty bucket; a row scored from its tasks also has `uncertainty`: per table and column header
    its standard error and 95% interval in %, n, the sessions counted and the method, docs/reports.md
    "Uncertainty"). The run-health lines the run printed go under the tables (`health` in summary.json)."""
    md = run_dir / SUMMARY_MD
    md.write_text("```text\n" + tables_text.rstrip("\n") + "\n```\n" + "".join(f"\n{n}\n" for n in [*health, *notes]),
                  encoding="utf-8")

    def table(number: int, values: dict[str, float]) -> dict[str, float | None]:
        # keyed by the printed column headers, in their order
        return {header: (None if math.isnan(values[column]) else round(values[column], 4))
                for header, column in zip(HEADERS[number], COLUMNS[number], strict=True)}

    def uncertainty(number: int, errors: dict[str, Any]) -> dict[str, Any]:
        return {header: errors[column].as_percent()
                for header, column in zip(HEADERS[number], COLUMNS[number], strict=True)}

    def entry(row: Any) -> dict[str, Any]:
        found = {"label": row.label, "tables": {str(t): table(t, values) for t, values in sorted(row.values.items())}}
        errors = getattr(row, "errors", None)
        if errors:
            found["uncertainty"] = {str(t): uncertainty(t, errors[t]) for t in sorted(row.values) if t in errors}
        return found

    data = {"rows": [entry(row) for row in rows], "notes": notes, **({"health": list(health)} if health else {})}
    js = run_dir / SUMMARY_JSON
    tmp = js.with_name(js.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, js)
    return md, js
