"""`export --to leaderboard`: the benchmark's leaderboard row of a run, in the columns of its project page's
table (the paper's Table 6: single, multi, clarify, chat, order1-4, task, session accuracy, in % with two
decimals), marked `standard` or `custom`.

Standard means what the leaderboard's rows are: the release protocol scored by the released evaluator's
strict checker, on the full release (the dataset the run was given as `release`, which wtb_local uses only
after checking the pinned file's git blob sha1, all 256 of its sessions and 1,024 tasks scored), unsharded or
merged, and finished (`complete`). Anything else, any subset included (the 8-session sample, `--limit`, one
shard of a sharded run), is custom and says what differs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from wtb_local.analysis.exports.registry import Exported, Target
from wtb_local.analysis.exports.source import ExportRun, run_status
from wtb_local.analysis.reports.columns import keys_of
from wtb_local.analysis.reports.present import RELEASE_SESSIONS
from wtb_local.benchmark.protocols.registry import default_scoring

RELEASE_TASKS = 4 * RELEASE_SESSIONS
# the leaderboard's columns: the paper's Table 6, named as its CSV names them (analysis/reports/columns.py)
COLUMNS = keys_of("table6")


def differences(run: ExportRun) -> list[str]:
    """What keeps the run from being a standard row (empty: standard)."""
    facts = run.facts
    differs = []
    if run.run.manifest is None:
        differs.append("no run manifest (protocol, checker and dataset unknown)")
    protocol, checker = default_scoring()  # the benchmark's released evaluator: the leaderboard's rows
    if facts.protocol != protocol:
        differs.append(f"protocol {facts.protocol} (standard: {protocol})")
    if facts.checker != checker or facts.rescore:
        differs.append(f"checker {facts.checker}{' (a re-scoring)' if facts.rescore else ''} (standard: {checker})")
    source = run.manifest.dataset.source
    if run.run.manifest is not None and source != "release":
        differs.append(f"dataset {source or facts.dataset or 'unknown'} (standard: the pinned "
                       "release)")
    if (run.sessions_scored, run.tasks_scored) != (RELEASE_SESSIONS, RELEASE_TASKS):
        differs.append(f"{run.sessions_scored} sessions / {run.tasks_scored} tasks scored (standard: "
                       f"{RELEASE_SESSIONS} / {RELEASE_TASKS})")
    shard = run.manifest.shard
    if shard:
        differs.append(f"shard {shard.index} of {shard.count} of a sharded run (standard: all shards merged)")
    status = run_status(run)
    if status != "complete":
        differs.append(f"status {status} (standard: complete)")
    return differs


def leaderboard_row(run: ExportRun) -> dict[str, Any]:
    """The row, its marking and what it could not carry."""
    values = {**run.tables[6]}
    row: dict[str, Any] = {"model": run.facts.model_id}
    for column in COLUMNS:
        value = values[column]
        row[column] = None if value is None else round(value, 2)
    differs = differences(run)
    empty = [c for c in COLUMNS if row[c] is None]
    return {
        "row": row, "submission": "custom" if differs else "standard", "differs": differs,
        "run_dir": str(run.folder), "label": run.label, "protocol": run.facts.protocol,
        "checker": run.facts.checker, "sessions": run.sessions_scored, "tasks": run.tasks_scored,
        "wtb_local": run.manifest.wtb_local.version, "config_hash": run.manifest.config_hash,
        "not_carried": [f"{', '.join(empty)}: no task in the bucket (null)"] if empty else [],
        # each column's standard error, 95% interval (in %) and n (docs/reports.md "Uncertainty")
        "uncertainty": {column: estimate.as_percent() for column, estimate in run.errors.get(6, {}).items()},
    }


# The CSV's uncertainty columns, after the table's: per column its standard error and 95% interval in % and its n
# (tasks; sessions for session_acc). The table's own columns come first, as the project page's table has them.
UNCERTAINTY = ("se", "low", "high", "n")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return str(value) if isinstance(value, int) else f"{value:.2f}"


def write_leaderboard(rows: list[dict[str, Any]], file: str | Path) -> Path:
    """`.csv`: the table's columns, submission, differs and not_carried, then each column's uncertainty
    (`<column>_se`, `_low`, `_high`, `_n`), one line per run; otherwise JSON."""
    path = Path(file)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["model", *COLUMNS, "submission", "differs", "not_carried",
                         *(f"{c}_{figure}" for c in COLUMNS for figure in UNCERTAINTY)])
        for entry in rows:
            row, spread = entry["row"], entry["uncertainty"]
            writer.writerow([row["model"], *(_cell(row[c]) for c in COLUMNS),
                             entry["submission"], "; ".join(entry["differs"]), "; ".join(entry["not_carried"]),
                             *(_cell(spread.get(c, {}).get(figure)) for c in COLUMNS for figure in UNCERTAINTY)])
        path.write_text(buffer.getvalue(), encoding="utf-8")
    else:
        path.write_text(json.dumps({"columns": ["model", *COLUMNS], "rows": rows}, indent=2, ensure_ascii=False)
                        + "\n", encoding="utf-8")
    return path


class LeaderboardExporter:
    """`--to leaderboard DEST`: every run's row into one file (registry.py's interface)."""

    def __init__(self, target: Target) -> None:
        self.dest = str(target.dest)

    def check(self) -> None:
        """Nothing to reach: the file is written after every row is built."""

    def export(self, runs: list[ExportRun]) -> list[Exported]:
        rows = [leaderboard_row(run) for run in runs]
        path = write_leaderboard(rows, self.dest)
        exported = []
        for row, run in zip(rows, runs, strict=True):
            marked = row["submission"] + (f" ({'; '.join(row['differs'])})" if row["differs"] else "")
            exported.append(Exported(run.label, f"{marked}: {path}", list(row["not_carried"])))
        return exported


__all__ = ["COLUMNS", "RELEASE_TASKS", "UNCERTAINTY", "LeaderboardExporter", "differences", "leaderboard_row", "write_leaderboard"]
