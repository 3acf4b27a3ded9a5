"""Where a run directory keeps its files, in the reference's own layout, so `score` and the reference
scorer read a run directory unchanged. Every file and folder name of a run directory is here, once
(docs/files.md, "The run directory and its files"):

    <run dir>/manifest.json
    <run dir>/result/<model>/Wild-Tool-Bench_result.jsonl
    <run dir>/score/<model>/Wild-Tool-Bench_score.jsonl
    <run dir>/score/<model>/Wild-Tool-Bench_metric.json
    <run dir>/score-<checker>/score/<model>/...     a re-scoring (`rescore`), with its own manifest.json
    <run dir>/repeats/<r>/...  and  repeats.json   `--repeats K`
    <run dir>/shards/<I>-of-<N>/...                `--shard` (contract/shard_dirs.py)

`<model>` is the model name with `/` replaced by `_` (`model_dir_name`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MANIFEST_NAME = "manifest.json"
RESULT_FILE_NAME = "Wild-Tool-Bench_result.jsonl"
SCORE_FILE_NAME = "Wild-Tool-Bench_score.jsonl"
METRIC_FILE_NAME = "Wild-Tool-Bench_metric.json"
RESULT_DIR = "result"
SCORE_DIR = "score"
RESCORE_PREFIX = "score-"  # score-<checker>: a re-scoring with another argument checker
SUMMARY_MD = "summary.md"
SUMMARY_JSON = "summary.json"
REPEATS_DIR = "repeats"
REPEATS_JSON = "repeats.json"
LOCK_NAME = "run.lock"
INTERNAL_ERRORS_NAME = "internal_errors.jsonl"
ROW_FILE_NAMES = (RESULT_FILE_NAME, SCORE_FILE_NAME)
RUN_FILE_NAMES = (RESULT_FILE_NAME, SCORE_FILE_NAME, METRIC_FILE_NAME)


def model_dir_name(model_name: str) -> str:
    """The reference's folder name for a model: `/` replaced by `_`."""
    return model_name.replace("/", "_")


def rescore_dir_name(checker: str) -> str:
    """The folder of a re-scoring with `checker` inside its run directory."""
    return f"{RESCORE_PREFIX}{checker}"


@dataclass
class RunPaths:
    """The paths of one model's files in a run directory."""

    run_dir: Path
    model_name: str

    @property
    def manifest(self) -> Path:
        return self.run_dir / MANIFEST_NAME

    @property
    def result_file(self) -> Path:
        return self.run_dir / RESULT_DIR / model_dir_name(self.model_name) / RESULT_FILE_NAME

    @property
    def score_dir(self) -> Path:
        return self.run_dir / SCORE_DIR / model_dir_name(self.model_name)

    @property
    def score_file(self) -> Path:
        return self.score_dir / SCORE_FILE_NAME

    @property
    def metric_file(self) -> Path:
        return self.score_dir / METRIC_FILE_NAME

    def rescored(self, checker: str) -> RunPaths:
        """The paths of this run's re-scoring with `checker` (a run directory of its own, without results)."""
        return RunPaths(self.run_dir / rescore_dir_name(checker), self.model_name)
