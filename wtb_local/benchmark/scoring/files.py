"""Result, score and metric files (docs/evaluation.md §7): JSON lines read with one-line errors, written
like the reference lays them out (`score/<model>/Wild-Tool-Bench_score.jsonl`, `..._metric.json`)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wtb_local.contract.paths import METRIC_FILE_NAME, SCORE_DIR, SCORE_FILE_NAME, model_dir_name
from wtb_local.contract.rows import RowError, read_rows

__all__ = ["METRIC_FILE_NAME", "SCORE_FILE_NAME", "ScoringError", "append_result_row", "read_jsonl", "read_metric",
           "read_result_rows", "score_dir", "write_result_rows", "write_score_files"]


class ScoringError(ValueError):
    """Bad scoring input; the message is one line naming file, line and field."""


def score_dir(out_dir: str | Path, model_name: str) -> Path:
    return Path(out_dir) / SCORE_DIR / model_dir_name(model_name)


def read_jsonl(path: str | Path, notes: list[str] | None = None) -> list[tuple[int, dict[str, Any]]]:
    """(line number, row) of a result or score file by the one rule for damaged records
    (contract/rows.py): an incomplete last line (an interrupted write, also one cut inside a UTF-8
    character) dropped with the note `run` gives, added to `notes`; a foreign or duplicated line, or a
    file that cannot be read, raises ScoringError naming file and line."""
    try:
        return read_rows(path, notes)
    except RowError as exc:
        raise ScoringError(str(exc)) from None


def read_result_rows(path: str | Path, notes: list[str] | None = None) -> list[dict[str, Any]]:
    """The rows of a result file (one session per line). Structure is checked when scoring."""
    return [row for _, row in read_jsonl(path, notes)]


def write_result_rows(path: str | Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Write result rows as JSON lines (`ensure_ascii=False`), atomically."""
    return _write_atomic(Path(path), "".join(_json_line(row) for row in rows))


def append_result_row(path: str | Path, row: dict[str, Any]) -> None:
    """Append one session's row and fsync, so a killed run keeps every finished session."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(_json_line(row))
        handle.flush()
        os.fsync(handle.fileno())


def write_score_files(
    out_dir: str | Path, model_name: str, score_rows: list[dict[str, Any]], metric: dict[str, Any],
    *, nested: bool = True,
) -> tuple[Path, Path]:
    """Write `Wild-Tool-Bench_score.jsonl` and `..._metric.json`: under `out_dir/score/<model>/` (the
    reference's layout, used in run directories), or straight into `out_dir` when `nested` is false."""
    folder = score_dir(out_dir, model_name) if nested else Path(out_dir)
    score_path = _write_atomic(folder / SCORE_FILE_NAME, "".join(_json_line(row) for row in score_rows))
    metric_path = _write_atomic(
        folder / METRIC_FILE_NAME, json.dumps(metric, indent=4, ensure_ascii=False) + "\n"
    )
    return score_path, metric_path


def read_metric(path: str | Path) -> dict[str, Any]:
    """A metric.json file, or the metric file of a run/score directory (searched recursively)."""
    path = Path(path)
    if path.is_dir():
        # A run directory's own metric first: a sharded run also holds one per shard under shards/.
        found = sorted(path.glob(f"score/*/{METRIC_FILE_NAME}"))
        if not found and (path / "shards").is_dir():
            raise ScoringError(f"{path}: a sharded run that is not merged yet; run "
                               f"`python -m wtb_local merge {path}` first")
        found = found or sorted(path.rglob(METRIC_FILE_NAME)) or sorted(path.rglob("*metric*.json"))
        if not found:
            raise ScoringError(f"{path}: no {METRIC_FILE_NAME} found in this directory")
        path = found[0]
    try:
        metric = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ScoringError(f"{path}: cannot read: {_one_line(exc)}") from None
    except ValueError as exc:
        raise ScoringError(f"{path}: malformed JSON: {_one_line(exc)}") from None
    if not isinstance(metric, dict) or "total_info" not in metric:
        raise ScoringError(f"{path}: total_info: missing (not a metric file)")
    return metric


def _json_line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


def _write_atomic(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        # mkstemp creates the file 0600; give it the mode a plain open() would (group-readable under umask 022)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
