"""The runs `explain` compares: each RUN_DIR argument read into one run (or, for a `--repeats` run, one
run per seed), with its records, its per-step result rows, its score rows and its task verdicts.

A RUN_DIR is a run directory written by `run` (its own scoring), a re-scoring `RUN_DIR/score-<checker>`
written by `rescore` (the run's result file, judged by that checker), or a `--repeats` run directory
(`repeats.json`: its repeats, a seed group). Verdicts are counted as `report` counts them
(`reports.runs.load_runs`, `task_records`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wtb_local.analysis.explain.factors import RunRecords, read_factors
from wtb_local.contract.manifest import Manifest
from wtb_local.contract.recorded import ReplayError, recorded_manifest
from wtb_local.contract.run_dir import ManifestError, RunDir

TaskKey = tuple[str, int]  # (session id, task index)
_REPLAY_DEPTH = 8  # a replay of a replay of ...: followed this far


class ExplainError(ValueError):
    """Runs that cannot be explained; one line naming the run and what to do."""


@dataclass
class ExplainRun:
    label: str
    path: Path
    manifest: Manifest
    records: RunRecords
    factors: dict[str, str]
    model_name: str
    result_file: Path | None
    result_rows: dict[str, dict[str, Any]]  # session id -> result row
    score_rows: dict[str, dict[str, Any]]  # session id -> score row
    sessions: dict[str, Any]  # session id -> dataset Session
    verdicts: dict[TaskKey, bool]  # task -> correct
    group: str | None = None  # the `--repeats` run directory this run is one seed of
    notes: list[str] = field(default_factory=list)

    @property
    def dataset_path(self) -> str | None:
        path = self.manifest.dataset_path
        return path if path is not None and Path(path).is_file() else None


def generation_manifest(manifest: Manifest) -> tuple[Manifest, list[str]]:
    """The manifest of the run whose completions `manifest`'s run holds: itself, or for a run that replayed
    recorded completions (its hashed config holds the replayed file's `replay_sha256`, which only a replay
    records), the recorded run's (followed through replays of replays); with a note when a replayed run's
    manifest cannot be found."""
    current = manifest
    for _ in range(_REPLAY_DEPTH):
        source = current.settings.replay  # the recorded source (`--replay`)
        if not current.config.replay_sha256 or not source:
            return current, []  # generated its completions, or fixed replies of its own (a script)
        try:
            recorded = recorded_manifest(source)
        except ReplayError:
            recorded = None
        if recorded is None:
            return current, [(f"the replayed run's manifest ({source}) is not readable: generation factors "
                              "are the replay's own")]
        current = recorded
    return current, []


def _result_file(path: Path, manifest: Manifest, model_dir: str) -> Path | None:
    """The folder's own result file, else (a re-scoring) its run's; never the path the manifest recorded,
    which names where the run was written, not where a copied or moved run is."""
    candidates = [RunDir(path).paths(model_dir).result_file]
    base = manifest.protocol.rescore_of
    if base:
        candidates.append(RunDir(Path(base)).paths(model_dir).result_file)
    return next((c for c in candidates if c.is_file()), None)


def load_run(path: str | Path, dataset: str | None = None, *, label: str | None = None,
             group: str | None = None) -> ExplainRun:
    """One run directory (or re-scoring directory) with its verdicts, as `report` counts them."""
    from wtb_local.analysis.reports.runs import ReportError, load_runs  # deferred: start-up
    from wtb_local.benchmark.scoring.files import (  # deferred: start-up
        ScoringError,
        model_dir_name,
        read_jsonl,
    )

    folder = Path(path)
    try:  # checked against its model: one that does not validate is refused naming the field
        manifest = RunDir(folder).manifest
    except ManifestError as exc:
        raise ExplainError(str(exc)) from None
    if manifest is None:
        raise ExplainError(f"{path}: no readable manifest.json; explain reads run directories written by `run` "
                           "(or `rescore`'s RUN_DIR/score-<checker>)")
    try:
        loaded = [run for run in load_runs([folder], dataset) if run.source.resolve() == folder.resolve()]
    except (ReportError, ScoringError) as exc:
        raise ExplainError(str(exc)) from None
    if not loaded or not loaded[0].detailed:
        raise ExplainError(f"{path}: no score or result file of its own; explain reads a run directory, a "
                           "re-scoring RUN_DIR/score-<checker> or a --repeats run directory")
    run = loaded[0]
    model_dir = model_dir_name(run.model_name)
    result_file = _result_file(folder, manifest, model_dir)
    dropped: list[str] = []  # an incomplete last line left by an interrupted run, dropped as `run` does
    rows = run.result_rows if run.result_rows is not None else (
        [row for _, row in read_jsonl(result_file, dropped)] if result_file is not None else [])
    generation, notes = generation_manifest(manifest)
    notes = [*dict.fromkeys([*([run.note] if run.note else []), *dropped]), *notes]
    records = RunRecords(manifest=manifest, generation=generation, checker=run.facts.checker)
    sessions = {session.id: session for session in run.sessions or []}
    verdicts = {(task.session_id, task.task_idx): task.correct for task in run.tasks}
    return ExplainRun(
        label=label or str(path), path=folder, manifest=manifest, records=records, factors=read_factors(records),
        model_name=run.model_name, result_file=result_file,
        result_rows={row["id"]: row for row in rows if isinstance(row, dict) and "id" in row},
        score_rows={row["id"]: row for row in run.score_rows or [] if isinstance(row, dict) and "id" in row},
        sessions=sessions, verdicts=verdicts, group=group, notes=notes)


def runs_to_explain(paths: Sequence[str | Path], dataset: str | None = None) -> list[ExplainRun]:
    """Every RUN_DIR argument as runs, in the order given; a `--repeats` run directory as its repeats.
    Each is loaded by `load_run`, through the one loader of runs (`reports.runs.load_runs`)."""
    from wtb_local.analysis.commands.repeat_runs import read_summary  # deferred: start-up

    runs: list[ExplainRun] = []
    for path in paths:
        summary = read_summary(path)
        unfinished = RunDir(Path(path)).unfinished_repeats()
        if unfinished is not None:
            raise ExplainError(unfinished)
        if summary is None:
            runs.append(load_run(path, dataset))
            continue
        for sub in summary.get("runs") or []:
            runs.append(load_run(Path(path) / sub, dataset, label=f"{path}/{sub}".replace("//", "/"),
                                 group=str(path)))
    labels = [run.label for run in runs]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ExplainError(f"{repeated[0]}: given twice; name each run once")
    if len(runs) < 2:
        raise ExplainError("explain compares runs: give at least two run directories (or one --repeats run "
                           "directory of two or more seeds)")
    return runs


def session_sha256(session: Any) -> str:
    """A session's content, hashed: runs of different dataset files are compared on the sessions whose
    content is the same."""
    text = json.dumps(session.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def common_tasks(runs: Sequence[ExplainRun]) -> tuple[list[TaskKey], list[str]]:
    """The tasks every run has, of sessions whose content is the same in every run's dataset, in session
    then task order; with a note for each kind of task left out."""
    from wtb_local.benchmark.evaluator.metrics import session_index  # deferred: start-up

    notes = []
    keys = set(runs[0].verdicts)
    for run in runs[1:]:
        keys &= set(run.verdicts)
    union = set().union(*(set(run.verdicts) for run in runs))
    if len(keys) < len(union):
        notes.append(f"{len(union) - len(keys)} task(s) are not in every run: compared on the {len(keys)} "
                     "that are")
    differing = {sid for sid in {key[0] for key in keys}
                 if len({session_sha256(run.sessions[sid]) for run in runs if sid in run.sessions}) > 1}
    if differing:
        keys = {key for key in keys if key[0] not in differing}
        notes.append(f"{len(differing)} session(s) differ in content between the runs' datasets: left out")
    ordered = sorted(keys, key=lambda key: (session_index(key[0]), key[1]))
    return ordered, notes
