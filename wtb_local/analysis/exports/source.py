"""The one place the exporters read run directories: through `report`'s loader (analysis/reports/runs.py), so a run
reads the same in an export as in `report`, including runs written by earlier wtb_local versions and the
benchmark harness's own output folders. Each run comes with its Table 6/7 figures, its health, a stable key
and a few facts read from its manifest."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from wtb_local.analysis.exports.registry import ExportError
from wtb_local.analysis.reports.runs import ReportError, Run, load_runs
from wtb_local.analysis.reports.table import COLUMNS, metric_values, scored_errors
from wtb_local.contract.manifest import Manifest
from wtb_local.contract.run_dir import RunDir
from wtb_local.contract.score_sets import ScoreSet, score_set
from wtb_local.contract.secrets import mask_text


@dataclass
class ExportRun:
    """One run as every exporter sees it."""

    run: Run
    given: Path  # the path named on the command line
    tables: dict[int, dict[str, float | None]] = field(default_factory=dict)  # Table 6/7 in %, None: no tasks

    @property
    def manifest(self) -> Manifest:
        return self.run.manifest or Manifest()

    @property
    def metric(self) -> dict[str, Any]:
        return self.run.metric

    @property
    def facts(self) -> Any:
        return self.run.facts

    @property
    def label(self) -> str:
        return self.run.label

    @property
    def folder(self) -> Path:
        """The run directory (the folder that holds `result/` and `score/`)."""
        return self.run.base

    @property
    def config(self) -> dict[str, Any]:
        return self.manifest.config.written()

    @property
    def settings(self) -> dict[str, Any]:
        return self.manifest.settings.written()

    @property
    def sessions_scored(self) -> int:
        return int(self.metric.get("total_info", {}).get("session", {}).get("total_count", 0))

    @property
    def tasks_scored(self) -> int:
        return int(self.metric.get("total_info", {}).get("task", {}).get("total_count", 0))

    @cached_property
    def errors(self) -> dict[int, dict[str, Any]]:
        """Table 6/7 estimates per column (docs/reports.md "Uncertainty"); none for a bare metric file or a
        --repeats mean row."""
        run = self.run
        return scored_errors(run.score_rows, run.sessions, run.metric, run.protocol[1]) if run.summary is None else {}

    @property
    def empty_columns(self) -> list[str]:
        """`table6.chat`, ...: the columns whose bucket holds no task (no figure to carry)."""
        return [f"table{t}.{c}" for t in (6, 7) for c, v in self.tables[t].items() if v is None]

    @property
    def score_set(self) -> ScoreSet:
        """Which scoring of the run this record holds (contract/score_sets.py): its own, or a re-scoring."""
        return score_set(self.folder, self.run.source if self.facts.rescore else self.folder,
                         self.facts.protocol, self.facts.checker)

    @property
    def key(self) -> str:
        """The record's stable key: the run's key for the run's own scoring, a key of its own for each
        re-scoring (`rescore`), so that a run and its re-scorings are exported as distinct records."""
        return self.score_set.record_key(self.run_key)

    @property
    def run_key(self) -> str:
        """A stable identity of the run: sha256 of its config hash, the moment its first invocation started
        (to the second) and the run folder's name, which all survive moving the folder; the name keeps two
        runs of one configuration started in the same second apart. A run without a manifest (the
        harness's own files): sha256 of its scored file's bytes."""
        started = self.manifest.first_started
        if self.manifest.config_hash and started:
            identity = json.dumps([self.manifest.config_hash, started, self.run.model_name, self.folder.name])
            return hashlib.sha256(identity.encode()).hexdigest()
        digest = hashlib.sha256(self.run.model_name.encode() + b"\0")
        for name in ("score", "result"):
            files = sorted(self.folder.glob(f"{name}/{self.run.model_name}/*.jsonl")) or (
                [self.folder] if self.folder.is_file() else [])
            for file in files:
                digest.update(file.read_bytes())
            if files:
                break
        return digest.hexdigest()

    def health(self) -> dict[str, Any]:
        from wtb_local.analysis.reports.health import run_health  # deferred: start-up (--help)

        return run_health(self.run.result_rows, self.run.score_rows, self.run.manifest)


def _tables(metric: dict[str, Any]) -> dict[int, dict[str, float | None]]:
    tables: dict[int, dict[str, float | None]] = {}
    for table in (6, 7):
        values = metric_values(metric, table)
        tables[table] = {c: None if math.isnan(values[c]) else round(values[c], 4) for c in COLUMNS[table]}
    return tables


def load_export_runs(paths: Sequence[str | Path], dataset: str | None = None) -> list[ExportRun]:
    """Every run under the paths (a `--repeats` run gives each repeat; its mean row is not a run)."""
    runs: list[ExportRun] = []
    for path in paths:
        try:
            loaded = load_runs([path], dataset)
        except (ReportError, ValueError) as exc:
            raise ExportError(str(exc)) from None
        runs += [ExportRun(run, Path(path), _tables(run.metric)) for run in loaded if run.summary is None]
    return runs


def masked(value: Any) -> Any:
    """`value` with every credential in a URL masked (contract/secrets.py), strings inside dicts and lists
    included: what an export records of a manifest (settings such as `base_url`, `mlflow_uri`)."""
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, dict):
        return {key: masked(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [masked(item) for item in value]
    return value


def run_status(run: ExportRun) -> str:
    """The manifest's status; a re-scoring's (`rescore`) is its run's; `complete` for the harness's own files
    (they hold finished sessions only)."""
    if run.run.manifest is None:
        return "complete"
    status = str(run.manifest.status or "complete")
    if run.facts.rescore and status == "rescored":
        own = RunDir(run.folder).manifest
        status = str((own.status if own is not None else None) or status)
    return status


__all__ = ["ExportRun", "load_export_runs", "masked", "run_status"]
