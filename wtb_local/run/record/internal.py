"""The sessions an internal error stopped (`internal_errors.jsonl` in the run directory): one line per
session, its first internal error (kind, detail, where, task, step) and the completions it got, so that the
rerun, once the error is fixed, sends them back instead of generating them again (docs/reliability.md,
"Internal errors"). The file exists only while such sessions are unfinished: a run that leaves none removes
it, and an uninterrupted run without internal errors never writes it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from wtb_local.contract.paths import INTERNAL_ERRORS_NAME
from wtb_local.run.record.store import session_index


def read_rows(run_dir: Path) -> list[dict[str, Any]]:
    """The kept sessions of the file; a line that is not one (a partial last line of a killed write) is
    skipped: its completions are generated again."""
    try:
        text = (Path(run_dir) / INTERNAL_ERRORS_NAME).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    rows = []
    for line in text.split("\n"):
        try:
            row = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("id"), str) and isinstance(row.get("completions"), list):
            rows.append(row)
    return rows


def read_kept(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The completions kept by the previous run, by request id; {} when there are none."""
    return {c["request_id"]: c for row in read_rows(run_dir) for c in row["completions"]
            if isinstance(c, dict) and isinstance(c.get("request_id"), str) and isinstance(c.get("text"), str)}


def write_broken(run_dir: Path, broken: list[dict[str, Any]]) -> Path | None:
    """This run's stopped sessions, sorted by session; the file removed when there are none."""
    path = Path(run_dir) / INTERNAL_ERRORS_NAME
    if not broken:
        path.unlink(missing_ok=True)
        return None
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        rows = sorted(broken, key=lambda r: session_index(r["id"]))
        handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return path


def counts(errors: list[Any]) -> dict[str, int]:
    """The manifest's `internal_errors`: {kind: steps}, sorted."""
    return dict(sorted(Counter(error.kind for error in errors).items()))
