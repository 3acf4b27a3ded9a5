"""The printed tables kept in the run directory: `summary.md` (as printed) and `summary.json` (as data)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from wtb_local.analysis.reports.table import COLUMNS, HEADERS
from wtb_local.contract.paths import SUMMARY_JSON, SUMMARY_MD


def write_summary(run_dir: Path, rows: list[Any], tables_text: str, notes: list[str]) -> tuple[Path, Path]:
    """The tables as printed (`summary.md`) and as data (`summary.json`: per row its label and values in %,
    null for an empty bucket)."""
    md = run_dir / SUMMARY_MD
    md.write_text("```text\n" + tables_text.rstrip("\n") + "\n```\n" + "".join(f"\n{n}\n" for n in notes),
                  encoding="utf-8")

    def table(number: int, values: dict[str, float]) -> dict[str, float | None]:
        # keyed by the printed column headers, in their order
        return {header: (None if math.isnan(values[column]) else round(values[column], 4))
                for header, column in zip(HEADERS[number], COLUMNS[number], strict=True)}

    data = {"rows": [{"label": row.label,
                      "tables": {str(t): table(t, values) for t, values in sorted(row.values.items())}}
                     for row in rows],
            "notes": notes}
    js = run_dir / SUMMARY_JSON
    tmp = js.with_name(js.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, js)
    return md, js
