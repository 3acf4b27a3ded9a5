"""Where a run directory keeps its files, in the reference's own layout, so `score` and the reference
scorer read a run directory unchanged:

    <run dir>/manifest.json
    <run dir>/result/<model>/Wild-Tool-Bench_result.jsonl
    <run dir>/score/<model>/Wild-Tool-Bench_score.jsonl
    <run dir>/score/<model>/Wild-Tool-Bench_metric.json

`<model>` is the model name with `/` replaced by `_` (`model_dir_name`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

RESULT_FILE_NAME = "Wild-Tool-Bench_result.jsonl"


def model_dir_name(model_name: str) -> str:
    """The reference's folder name for a model: `/` replaced by `_`."""
    return model_name.replace("/", "_")


@dataclass
class RunPaths:
    run_dir: Path
    model_name: str

    @property
    def result_file(self) -> Path:
        return self.run_dir / "result" / model_dir_name(self.model_name) / RESULT_FILE_NAME

    @property
    def score_dir(self) -> Path:
        return self.run_dir / "score" / model_dir_name(self.model_name)
