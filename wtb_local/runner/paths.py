"""Where a run's files go: `runs/<model>/` (or `--out`) in the reference's own layout, so `score` and
the reference scorer read a run directory unchanged:

    <run dir>/manifest.json
    <run dir>/result/<model>/Wild-Tool-Bench_result.jsonl
    <run dir>/score/<model>/Wild-Tool-Bench_score.jsonl
    <run dir>/score/<model>/Wild-Tool-Bench_metric.json

`<model>` is the model name with `/` replaced by `_`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wtb_local.runner.config import RunSettings
from wtb_local.scoring.files import RESULT_FILE_NAME, model_dir_name


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


def run_paths(settings: RunSettings) -> RunPaths:
    name = settings.model_name or settings.model or settings.backend
    run_dir = Path(settings.out) if settings.out else Path("runs") / model_dir_name(name)
    if settings.shard:  # one shard of a sharded run: its own run directory, joined later by `merge`
        from wtb_local.runner.shards import SHARDS_DIR, parse_shard

        run_dir = run_dir / SHARDS_DIR / parse_shard(settings.shard).dir_name
    return RunPaths(run_dir, name)
