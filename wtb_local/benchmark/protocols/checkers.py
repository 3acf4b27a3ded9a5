"""The two argument checkers a run can be scored with: the released evaluator's (`strict`) and the paper
harness's (`lenient`); each protocol names its own, `rescore` applies the other one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wtb_local.benchmark.scoring import (
    ScoredFile,
    compute_metrics,
    load_scorable,
    model_dir_name,
    score_results,
    write_score_files,
)
from wtb_local.benchmark.scoring import score_file as score_file_strict
from wtb_local.contract.errors import RecordError
from wtb_local.contract.paths import RunPaths

CHECKERS = ("strict", "lenient")


def score_with(checker: str, result_rows: list[dict[str, Any]], sessions: list[Any], model_name: str,
               source: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Score result rows with the released evaluator's checker (`strict`) or the paper harness's
    (`lenient`, docs/evaluation.md)."""
    if checker == "lenient":
        from wtb_local.benchmark.protocols.setup import score_lenient  # deferred: start-up

        return score_lenient(result_rows, sessions, model_name)
    if checker != "strict":
        raise ValueError(f"unknown checker {checker!r}; choose one of {', '.join(CHECKERS)}")
    return score_results(result_rows, sessions, model_name, source=source)


def metrics_of(checker: str) -> Any:
    """The metric function of a checker's score rows (score rows, sessions, model name -> metric dict):
    the release's, or the harness's buckets for the lenient checker."""
    if checker == "lenient":
        from wtb_local.benchmark.protocols.harness_scoring import harness_metrics  # deferred: start-up

        return harness_metrics
    return compute_metrics


def score_run(result_rows: list[dict[str, Any]], sessions: list[Any], model_name: str,
              paths: RunPaths, checker: str = "strict") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Score every session of a run (or a merged one) and write the score and metric files into its run
    directory; a failed write is a RecordError naming the file."""
    score_rows, metric = score_with(checker, result_rows, sessions, model_name, str(paths.result_file))
    try:
        write_score_files(paths.run_dir, model_name, score_rows, metric)
    except OSError as exc:
        raise RecordError(exc.filename or paths.score_dir, exc) from exc
    return score_rows, metric


def score_file(path: str | Path, sessions: Sequence[Any], model_name: str | None = None,
               checker: str = "strict", notes: list[str] | None = None) -> ScoredFile:
    """Score a result file with the release's checker, or the paper harness's (`lenient`,
    docs/reference/paper-harness.md §3.1); a score file's labels are re-counted, never scored twice."""
    if checker != "lenient":
        return score_file_strict(path, sessions, model_name, notes)
    from wtb_local.benchmark.protocols.harness_scoring import (  # deferred: start-up
        harness_metrics,
        score_rows_lenient,
    )

    ordered, name, already = load_scorable(path, sessions, model_name, notes)
    score_rows = ordered if already else score_rows_lenient(ordered, sessions)
    return ScoredFile(score_rows, harness_metrics(score_rows, sessions, model_dir_name(name)), name, already)
