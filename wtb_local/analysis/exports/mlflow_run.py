"""`export --to mlflow` (and `run --mlflow-uri`): one MLflow run per wtb_local run, through MLflow's own
client (the `export` extra). Parameters: the resolved options (the manifest's `config` and `settings`);
metrics: the Table 6/7 columns, the task and session counts and the run's health; tags: model, protocol,
checker, engine and versions; artifacts: the report page, the summary and the manifest.

Idempotent: the MLflow run carries the run's stable key (`wtb_local.run_key`, analysis/exports/source.py), so
exporting again finds it and updates what changed (metrics, tags, artifacts) instead of adding a run. MLflow
parameters cannot change once logged; a changed one is named, never silently dropped."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import math
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any

from wtb_local.analysis.exports.registry import Exported, ExportError, Target
from wtb_local.analysis.exports.source import ExportRun, run_status
from wtb_local.analysis.reports.columns import columns_of
from wtb_local.contract.paths import MANIFEST_NAME, SUMMARY_JSON, SUMMARY_MD
from wtb_local.contract.secrets import mask_text, mask_url

DEFAULT_EXPERIMENT = "wtb_local"
KEY_TAG = "wtb_local.run_key"  # the record's key: the run's, or its re-scoring's (contract/score_sets.py)
RUN_TAG = "wtb_local.run"  # the run's key, shared by the run's record and its re-scorings'
SCORE_SET_TAG = "wtb_local.score_set"  # `score` (the run's own scoring) or `score-<checker>`
# how a run's recorded end reads as an MLflow run status
_STATUS = {"complete": "FINISHED", "interrupted": "KILLED", "incomplete": "KILLED", "failed": "FAILED"}
_HEALTH = tuple(c.key for c in columns_of("health") if c.exported)  # the numeric health figures


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, dict) and value:
        for key in sorted(value):
            _flatten(f"{prefix}.{key}", value[key], out)
    else:
        out[prefix] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def params_of(run: ExportRun) -> dict[str, str]:
    """The resolved options as MLflow parameters: `config.<name>` (the hashed settings) and
    `settings.<name>` (the others), nested values dotted, lists and nulls as JSON."""
    out: dict[str, str] = {}
    for section, values in (("config", run.config), ("settings", run.settings)):
        for key, value in sorted(values.items()):
            _flatten(f"{section}.{key}", value, out)
    return {name: mask_text(value) for name, value in out.items()}  # a URL's credentials never recorded


def metrics_of(run: ExportRun) -> dict[str, float]:
    """`table6.<column>`, `table7.<column>` (in %) with `.se` (its standard error in %, docs/reports.md
    "Uncertainty"), `sessions`, `tasks` and `health.<figure>`; an empty bucket or a figure the files do not
    record is left out."""
    out: dict[str, float] = {}
    errors = run.errors
    for table in (6, 7):
        for column, value in run.tables[table].items():
            if value is not None:
                out[f"table{table}.{column}"] = float(value)
                se = errors.get(table, {}).get(column)
                if se is not None and math.isfinite(se.se):
                    out[f"table{table}.{column}.se"] = 100.0 * se.se
    out["sessions"] = float(run.sessions_scored)
    out["tasks"] = float(run.tasks_scored)
    health = run.health()
    for name in _HEALTH:
        value = health.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            out[f"health.{name}"] = float(value)
    return out


def tags_of(run: ExportRun) -> dict[str, str]:
    facts = run.facts
    versions = run.manifest.wtb_local
    tags = {KEY_TAG: run.key, RUN_TAG: run.run_key, SCORE_SET_TAG: run.score_set.name, "mlflow.runName": run.label,
            "model": facts.model_id, "protocol": facts.protocol, "checker": facts.checker,
            "engine": str(run.manifest.config.backend or "unknown"),
            "status": run_status(run), "dataset": str(run.manifest.dataset.source or facts.dataset
                                                      or "unknown"),
            "run_dir": str(run.folder)}
    if versions.version:
        tags["version.wtb_local"] = versions.version
    if versions.git_commit:
        tags["version.wtb_local_commit"] = versions.git_commit + (" (dirty)" if versions.git_dirty
                                                                         else "")
    for name, version in sorted(run.manifest.packages.items()):
        if version:
            tags[f"version.{name}"] = str(version)
    return {name: mask_text(value) for name, value in tags.items()}


def _time_ms(text: Any) -> int | None:
    try:
        return int(dt.datetime.fromisoformat(str(text)).timestamp() * 1000)
    except (TypeError, ValueError):
        return None


def _times(run: ExportRun) -> tuple[int | None, int | None]:
    invocations = run.manifest.invocations
    started = next((_time_ms(i.started) for i in invocations if i.started), None)
    ended = next((_time_ms(i.finished) for i in reversed(invocations) if i.finished), None)
    return started, ended


def _artifacts(run: ExportRun, scratch: Path) -> tuple[list[Path], list[str]]:
    """The manifest, summary.md/json and a report page written for this export; what is missing."""
    from wtb_local.analysis.reports.build import (
        write_report,  # deferred: start-up (loads the report's plotting)
    )

    files, missing = [], []
    for name in (MANIFEST_NAME, SUMMARY_MD, SUMMARY_JSON):
        path = run.folder / name
        if path.is_file():
            files.append(path)
        else:
            missing.append(f"artifact {name}: not in the run directory")
    if run.run.detailed:
        written = write_report([run.run], scratch / "report", ("html",), True)
        files += [path for path in written.files if path.name == "report.html"]
    else:
        missing.append("artifact report.html: the run has a metric file only")
    return [_masked_copy(path, scratch / "masked") for path in files], missing


def _masked_copy(path: Path, folder: Path) -> Path:
    """`path`, or a copy with every URL's credentials masked when it holds one (an older manifest, a
    report page showing its settings): an artifact never records a secret."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if mask_text(text) == text:
        return path
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / path.name
    copy.write_text(mask_text(text), encoding="utf-8")
    return copy


def export_mlflow(runs: list[ExportRun], tracking_uri: str,
                  experiment: str = DEFAULT_EXPERIMENT) -> list[tuple[str, str, list[str]]]:
    """Log each run; returns (MLflow run id, `created`/`updated`, what could not be carried) per run."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param, RunTag, ViewType
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found is not None else client.create_experiment(experiment)
    outcome = []
    for run in runs:
        key = run.key
        started, ended = _times(run)
        same = client.search_runs([experiment_id], filter_string=f"tags.`{KEY_TAG}` = '{key}'",
                                  run_view_type=ViewType.ALL, max_results=2)
        if same:
            mlflow_run = same[0]
            if mlflow_run.info.lifecycle_stage == "deleted":
                client.restore_run(mlflow_run.info.run_id)
            how = "updated"
        else:
            mlflow_run = client.create_run(experiment_id, start_time=started, tags={KEY_TAG: key},
                                           run_name=run.label)
            how = "created"
        run_id = mlflow_run.info.run_id
        old_params, old_metrics, old_tags = (mlflow_run.data.params, mlflow_run.data.metrics, mlflow_run.data.tags)
        missing: list[str] = []
        params = []
        for name, value in params_of(run).items():
            if len(value) > MAX_PARAM_VAL_LENGTH:
                missing.append(f"param {name}: {len(value)} characters, cut to MLflow's {MAX_PARAM_VAL_LENGTH}")
                value = value[:MAX_PARAM_VAL_LENGTH]
            if name not in old_params:
                params.append(Param(name, value))
            elif old_params[name] != value:
                missing.append(f"param {name}: MLflow keeps the first export's value {old_params[name]!r}, "
                               f"now {value!r}")
        stamp = ended or started or 0
        metrics = [Metric(name, value, stamp, 0) for name, value in metrics_of(run).items()
                   if old_metrics.get(name) != value]
        tags = [RunTag(name, value) for name, value in tags_of(run).items() if old_tags.get(name) != value]
        missing += [f"metric {column}: no task in the bucket" for column in run.empty_columns]
        for start in range(0, max(len(params), len(metrics), len(tags)), 100):  # MLflow's batch limit is 100 params
            client.log_batch(run_id, metrics=metrics[start:start + 100], params=params[start:start + 100],
                             tags=tags[start:start + 100])
        with tempfile.TemporaryDirectory(prefix="wtb-mlflow-") as scratch:
            files, absent = _artifacts(run, Path(scratch))
            missing += absent
            for path in files:
                client.log_artifact(run_id, str(path))
        status = _STATUS.get(run_status(run))
        if status is None:  # `running`: a live run, or one whose process died (report tells which)
            client.update_run(run_id, status="RUNNING")
            missing.append(f"status {run_status(run)}: logged as RUNNING")
        else:
            client.set_terminated(run_id, status, end_time=ended)
        outcome.append((run_id, how, missing))
    return outcome


class _MaskingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = mask_text(record.getMessage()), None
        return True


@contextmanager
def _masked_logs() -> Iterator[None]:
    """MLflow's log lines (its handlers, and the root's) with every URL's credentials masked."""
    masking = _MaskingFilter()
    handlers = {*logging.getLogger("mlflow").handlers, *logging.getLogger().handlers}
    for handler in handlers:
        handler.addFilter(masking)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(masking)


class MlflowExporter:
    """`--to mlflow --tracking-uri URI` and `run --mlflow-uri URI` (registry.py's interface): the URI is
    probed before any run is read (tracker.py); an error of MLflow's client during the export is one line,
    its URLs masked."""

    def __init__(self, target: Target) -> None:
        self.uri = str(target.tracking_uri)
        self.experiment = target.experiment
        self.option = target.uri_option

    def check(self) -> None:
        from wtb_local.analysis.exports.tracker import probe_tracker  # deferred: only with a tracking URI

        try:
            probe_tracker(self.uri, self.experiment)
        except ExportError as exc:
            raise ExportError(f"{self.option} {exc}") from None

    def export(self, runs: list[ExportRun]) -> list[Exported]:
        from mlflow.exceptions import MlflowException

        printed = io.StringIO()  # MLflow's client prints each run's link, credentials and all: masked here
        try:
            with redirect_stdout(printed), _masked_logs():
                outcome = export_mlflow(runs, self.uri, self.experiment)
        except (MlflowException, OSError) as exc:  # the server went away, refused or erred mid-export
            text = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise ExportError(f"{self.option} {mask_url(self.uri)}: not logged ({mask_text(text)})") from None
        finally:
            sys.stdout.write(mask_text(printed.getvalue()))
        where = f"in experiment {self.experiment} at {mask_url(self.uri)}"
        return [Exported(run.label, f"run {run_id} {how} {where}", missing)
                for (run_id, how, missing), run in zip(outcome, runs, strict=True)]


__all__ = ["DEFAULT_EXPERIMENT", "KEY_TAG", "RUN_TAG", "SCORE_SET_TAG", "MlflowExporter", "export_mlflow",
           "metrics_of", "params_of", "tags_of"]
