"""Scoring: result file -> score rows + metric dict, and the files the reference writes
(docs/evaluation.md §5-§7).

- `score_results(result_rows, sessions, model_name) -> (score_rows, metric)`
- `score_file(path, sessions, model_name=None)`: the same from a result file (or a score file, whose
  labels are then only re-counted), errors naming file and line
- `read_result_rows` / `write_result_rows` / `append_result_row`: result files for the runner
- `write_score_files(out_dir, model_name, score_rows, metric, *, nested=True)`: `score/<model>/Wild-Tool-Bench_*` (or flat)
- `read_metric(path)`: a metric file, or the one inside a run directory
Every scored task also gets `error_category` (taxonomy.py), after the reference's fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wtb_local.benchmark.evaluator.judge import score_session
from wtb_local.benchmark.evaluator.metrics import compute_metrics, session_index
from wtb_local.benchmark.scoring.checks import check_rows
from wtb_local.benchmark.scoring.files import (
    METRIC_FILE_NAME,
    SCORE_FILE_NAME,
    ScoringError,
    append_result_row,
    read_jsonl,
    read_metric,
    read_result_rows,
    score_dir,
    write_result_rows,
    write_score_files,
)
from wtb_local.benchmark.scoring.taxonomy import annotate_categories
from wtb_local.contract.paths import RESULT_FILE_NAME, model_dir_name
from wtb_local.contract.schema import Session

__all__ = [
    "METRIC_FILE_NAME",
    "RESULT_FILE_NAME",
    "SCORE_FILE_NAME",
    "ScoredFile",
    "ScoringError",
    "append_result_row",
    "compute_metrics",
    "load_scorable",
    "model_dir_name",
    "read_metric",
    "read_result_rows",
    "score_dir",
    "score_file",
    "score_results",
    "write_result_rows",
    "write_score_files",
]


def score_results(
    result_rows: Sequence[dict[str, Any]],
    sessions: Sequence[Session],
    model_name: str,
    *,
    source: str = "results",
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Score result rows: score rows sorted by numeric id, and the metric dict (`model_name` with `/`
    replaced by `_`, as the reference names it after the result folder). Raises ScoringError."""
    numbered = list(enumerate(result_rows, start=1))
    check_rows(numbered, sessions, source, "result")
    return _score(numbered, sessions, model_name)


@dataclass
class ScoredFile:
    """What `score_file` produced; `already_scored` when the input was a score file."""

    score_rows: list[dict[str, Any]]
    metric: dict[str, Any]
    model_name: str
    already_scored: bool


def load_scorable(path: str | Path, sessions: Sequence[Session],
                  model_name: str | None = None,
                  notes: list[str] | None = None) -> tuple[list[dict[str, Any]], str, bool]:
    """A result file's rows (or a score file's, then `True`: already scored), checked against the
    sessions and sorted by numeric id, with the model name they are scored under. `notes` gets the note
    of an incomplete last line left out, as `run` leaves it out (files.read_jsonl)."""
    rows = read_jsonl(path, notes)
    if not rows:
        raise ScoringError(f"{path}: no rows (empty file)")
    name = model_name or default_model_name(path, [row for _, row in rows])
    already = all("results" in row and "result" not in row for _, row in rows)
    check_rows(rows, sessions, str(path), "results" if already else "result")
    ordered = sorted((row for _, row in rows), key=lambda row: session_index(row["id"]))
    return ordered, name, already


def score_file(path: str | Path, sessions: Sequence[Session], model_name: str | None = None,
               notes: list[str] | None = None) -> ScoredFile:
    """Score a result file with the release's checker (the paper harness's: benchmark/protocols/checkers.py's
    `score_file`). A score file (rows with `results`) is not scored twice (the reference's walk is not
    idempotent): its labels are re-counted into the metric."""
    ordered, name, already = load_scorable(path, sessions, model_name, notes)
    if already:
        annotate_categories(ordered, sessions)
        return ScoredFile(ordered, compute_metrics(ordered, sessions, model_dir_name(name)), name, True)
    score_rows, metric = _score(list(enumerate(ordered, start=1)), sessions, name)
    return ScoredFile(score_rows, metric, name, False)


def default_model_name(path: str | Path, rows: Sequence[dict[str, Any]]) -> str:
    """The rows' `model_name` when they agree on one, else the result folder's name (the reference's)."""
    names = {name for row in rows if isinstance(name := row.get("model_name"), str)}
    if len(names) == 1:
        return names.pop()
    path = Path(path).resolve()
    return path.parent.name if path.name in (RESULT_FILE_NAME, SCORE_FILE_NAME) else path.stem


def _score(
    rows: Sequence[tuple[int, dict[str, Any]]], sessions: Sequence[Session], model_name: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    ordered = sorted((row for _, row in rows), key=lambda row: session_index(row["id"]))
    score_rows = [score_session(row) for row in ordered]
    annotate_categories(score_rows, sessions)
    return score_rows, compute_metrics(score_rows, sessions, model_dir_name(model_name))
