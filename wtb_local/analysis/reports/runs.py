"""Loading what `report` reads: wtb_local run directories, the benchmark harness's own output folders
(`result/<model>/…_result.jsonl`, `score/<model>/…_score.jsonl`, several models side by side), single
score, result or metric files.

A run with score rows (or result rows, scored here) and its dataset gives per-task records (type, order,
subtype, transitions, verdict, error category), which every breakdown is computed from; a bare metric
file gives only the Table 6/7 rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from wtb_local.benchmark.scoring.files import ScoringError, read_jsonl, read_metric
from wtb_local.contract.manifest import Manifest
from wtb_local.contract.paths import METRIC_FILE_NAME, RESULT_FILE_NAME, SCORE_FILE_NAME
from wtb_local.contract.run_dir import ManifestError, RunDir
from wtb_local.contract.shard_dirs import SHARDS_DIR, parse_shard_dir

# The paper's four coarse task types; an instruction transition is a change between consecutive tasks.
COARSE_TYPE = {
    "Single-Tool": "single",
    "Parallel Multi-Tool": "multi",
    "Sequential Multi-Tool": "multi",
    "Mixed Multi-Tool": "multi",
    "Clarify": "clarify",
    "Chat": "chat",
}


class ReportError(ValueError):
    """Bad report input; the message is one line naming the file and what to do."""


@dataclass
class TaskRecord:
    """One task of one run, with everything the breakdowns and the browser filter on."""

    session_id: str
    task_idx: int
    task_type: str
    subtype: str
    transitions: int
    correct: bool
    category: str | None
    optimal: bool


@dataclass
class Run:
    """One model's scored run (or only its metric file)."""

    label: str
    model_name: str
    model_id: str
    source: Path
    metric: dict[str, Any]
    thinking: bool | None = None
    manifest: Manifest | None = None
    score_rows: list[dict[str, Any]] | None = None
    result_rows: list[dict[str, Any]] | None = None
    sessions: list[Any] | None = None
    tasks: list[TaskRecord] = field(default_factory=list)
    note: str | None = None
    facts: Any = None  # reports.present.RunFacts: protocol, checker, recorded thinking mode
    summary: dict[str, Any] | None = None  # a `--repeats` run's mean row: its repeats.json

    @property
    def protocol(self) -> tuple[str, str]:
        """(protocol, checker) that produced the row."""
        return (self.facts.protocol, self.facts.checker) if self.facts is not None else ("release", "strict")

    @property
    def base(self) -> Path:
        """The run directory this row belongs to (a re-scoring's is its parent)."""
        return self.source.parent if self.facts is not None and self.facts.rescore else self.source

    @property
    def detailed(self) -> bool:
        return self.score_rows is not None and self.sessions is not None


@dataclass
class _Found:
    """Files of one model found under a path."""

    model_name: str
    source: Path
    score: Path | None = None
    result: Path | None = None
    metric: Path | None = None
    manifest: Manifest | None = None


def find_runs(path: str | Path) -> list[_Found]:
    """Every model's files under a path (a run directory, a harness output folder, or one file)."""
    path = Path(path)
    if path.is_file():
        return [_from_file(path)]
    unfinished = RunDir(path).unfinished_repeats()
    if unfinished is not None:
        raise ReportError(unfinished)
    found: dict[tuple[Path, str], _Found] = {}
    for attribute, name in (("score", SCORE_FILE_NAME), ("metric", METRIC_FILE_NAME), ("result", RESULT_FILE_NAME)):
        for file in sorted(path.rglob(name)):
            root = _run_root(file)
            if _is_shard(root, path):  # a sharded run's parts: its merged files stand for them
                continue
            entry = found.setdefault((root, file.parent.name), _Found(file.parent.name, root))
            setattr(entry, attribute, file)
    if not found and any(_is_shard(folder, path) for folder in path.glob("**/shards/*")):
        raise ReportError(f"{path}: a sharded run that is not merged yet; run "
                          f"`python -m wtb_local merge {path}` first")
    if not found:
        metrics = sorted(path.rglob("*metric*.json"))
        if not metrics:
            raise ReportError(f"{path}: no {SCORE_FILE_NAME}, {RESULT_FILE_NAME} or {METRIC_FILE_NAME} found")
        return [_Found(metrics[0].stem, path, metric=metrics[0])]
    runs = [found[key] for key in sorted(found)]
    for run in runs:  # several run directories under one path: each its own manifest
        run.manifest = _read_manifest(run.source)
    return runs


def _is_shard(folder: Path, searched: Path) -> bool:
    """`<run dir>/shards/<I>-of-<N>` below the searched path (a shard named directly is reported)."""
    return folder != searched and folder.parent.name == SHARDS_DIR and parse_shard_dir(folder.name) is not None


def _run_root(file: Path) -> Path:
    """RUN for RUN/score/<model>/file and RUN/result/<model>/file; the folder of a flat `score --out DIR`."""
    found = RunDir.find(file)
    return found.root if found is not None else file.parent


def _from_file(path: Path) -> _Found:
    name = path.parent.name if path.name in (SCORE_FILE_NAME, RESULT_FILE_NAME, METRIC_FILE_NAME) else path.stem
    found = _Found(name, path)
    if path.suffix == ".json":
        found.metric = path
        return found
    rows = read_jsonl(path)
    if rows and all("results" in row for _, row in rows):
        found.score = path
    else:
        found.result = path
    sibling = path.parent / METRIC_FILE_NAME
    if found.score is not None and sibling.is_file():
        found.metric = sibling
    run_dir = RunDir.find(path.resolve())  # RUN/score/<model>/file: the run's manifest and result file
    if run_dir is not None:
        found.manifest = _read_manifest(run_dir.root)
        result = run_dir.paths(name).result_file
        if found.score is not None and result.is_file():
            found.result = result
    return found


def _read_manifest(folder: Path) -> Manifest | None:
    """The run's manifest, checked against its model (contract/run_dir.py): one that is unreadable or does
    not validate stops the report with its one line."""
    try:
        return RunDir(folder).manifest
    except ManifestError as exc:
        raise ReportError(str(exc)) from None


def load_runs(paths: Sequence[str | Path], dataset: str | None = None,
              thinking: bool | None = None) -> list[Run]:
    """Every run under the paths, scored and broken down per task where a dataset is known (`dataset`,
    else the one the run's manifest records), each `--repeats` run followed by its mean row; labelled as
    every command labels them (analysis/reports/present.py)."""
    runs: list[Run] = []
    seen: set[tuple[Path, str]] = set()
    for path in paths:
        for found in find_runs(path):
            # a scoring found twice (`report RUN RUN/score-lenient`: the re-scoring is inside RUN) is shown once
            key = (found.source.resolve(), found.model_name)
            if key not in seen:
                seen.add(key)
                runs.append(_load(found, dataset, thinking))
        mean = _mean_run(Path(path), thinking)
        if mean is not None and (Path(path).resolve(), "") not in seen:
            seen.add((Path(path).resolve(), ""))
            runs.append(mean)
    label_runs(runs)
    return runs


def label_runs(runs: Sequence[Run]) -> None:
    """`name`, `name [protocol-checker]`; runs of one model from several run directories (sample vs
    release, two parsers) also say which: `name (run dir) ...`; a mean row says `(mean of K)`."""
    from wtb_local.analysis.reports.present import row_label  # deferred: start-up

    bases: dict[str, set[Path]] = {}
    for run in runs:
        if run.summary is None:
            bases.setdefault(run.facts.name, set()).add(run.base)
    means = [run.facts.name for run in runs if run.summary is not None]
    for run in runs:
        if run.summary is not None:
            where = f", {run.source}" if means.count(run.facts.name) > 1 else ""
            run.label = row_label(run.facts, f"mean of {run.summary['repeats']}{where}")
        else:
            run.label = row_label(run.facts, str(run.base) if len(bases[run.facts.name]) > 1 else None)


def _mean_run(path: Path, thinking: bool | None) -> Run | None:
    """The mean row of a `--repeats` run directory (repeats.json), as `run --repeats` prints it."""
    from wtb_local.analysis.commands.repeat_runs import read_summary  # deferred: start-up
    from wtb_local.analysis.reports.present import read_run_manifest, run_facts  # deferred: start-up

    summary = read_summary(path) if path.is_dir() else None
    if summary is None:
        return None
    manifest = read_run_manifest(path)
    metric = summary["mean_metric"]
    facts = run_facts(manifest, name=str(metric.get("model_name") or path.name), thinking=thinking)
    return Run(facts.name, facts.name, facts.model_id, path, metric, facts.thinking, manifest,
               note=f"the mean of {summary['repeats']} repeats ({', '.join(summary['runs'])})", facts=facts,
               summary=summary)


def _load(found: _Found, dataset: str | None, thinking: bool | None) -> Run:
    from wtb_local.analysis.reports.present import run_facts  # deferred: start-up

    if found.score is None and found.result is None:
        metric = read_metric(found.metric)  # type: ignore[arg-type]
        name = str(metric.get("model_name") or found.model_name)
        facts = run_facts(found.manifest, name=name, thinking=thinking)
        if found.manifest is None and isinstance(metric.get("protocol"), dict):  # a lenient metric file alone
            facts = replace(facts, protocol="paper?", checker=str(metric["protocol"].get("checker", "lenient")))
        return Run(name, name, facts.model_id, found.source, metric, facts.thinking, found.manifest,
                   note="metric file only: no per-task breakdowns, taxonomy or browser", facts=facts)
    facts = run_facts(found.manifest, name=found.model_name, thinking=thinking)
    sessions = _sessions(found, dataset)
    notes: list[str] = []  # an incomplete last line left by an interrupted run: dropped as `run` drops it
    result_rows = [row for _, row in read_jsonl(found.result, notes)] if found.result else None
    from wtb_local.benchmark.protocols.checkers import score_file

    # a score file is re-counted (not scored twice); a result file alone is scored here, with the checker
    # the run records (a lenient run keeps the harness's buckets, AP and OP)
    scored = score_file(found.score or found.result, sessions, found.model_name,  # type: ignore[arg-type]
                        checker=facts.checker, notes=notes)
    run = Run(found.model_name, found.model_name, facts.model_id, found.source, scored.metric, facts.thinking,
              found.manifest, scored.score_rows, result_rows, sessions, facts=facts,
              note="; ".join(dict.fromkeys(notes)) or None)
    run.tasks = task_records(scored.score_rows, sessions, facts.checker)
    return run


def _sessions(found: _Found, dataset: str | None) -> list[Any]:
    from wtb_local.benchmark.dataset import DatasetError, dataset_sha256, read_dataset, resolve_dataset

    manifest = found.manifest or Manifest()
    choice = dataset
    if choice is None and manifest.dataset:
        recorded = manifest.dataset_path
        choice = recorded if recorded is not None and Path(recorded).is_file() else manifest.dataset_source
    where = found.score or found.result
    if choice is None:
        raise ReportError(f"{where}: which dataset were these sessions run on? pass --dataset "
                          "(sample, release or a file)")
    try:
        path = resolve_dataset(choice, quiet=True)
        sessions, _ = read_dataset(path)
    except DatasetError as exc:
        raise ReportError(str(exc)) from None
    sha = manifest.dataset_sha256
    if sha is not None and sha != dataset_sha256(path):
        raise ReportError(f"{where}: its run's manifest records dataset sha256 {sha[:12]}..., but {path} "
                          "differs; pass the dataset the run used with --dataset")
    return sessions


def task_records(score_rows: Sequence[dict[str, Any]], sessions: Sequence[Any],
                 checker: str = "strict") -> list[TaskRecord]:
    """One record per dataset task of each scored session, in file order (sorted by numeric id); error
    categories by the rules of the scorer that judged them (`checker`)."""
    from wtb_local.benchmark.evaluator.metrics import session_index
    from wtb_local.benchmark.scoring.taxonomy import row_categories

    by_index = {session.index: session for session in sessions}
    records = []
    for row in score_rows:
        session = by_index[session_index(row["id"])]
        results = row.get("results")
        types = [getattr(t, "value", str(t)) for t in session.english_task_types]
        subtypes = ["First Turn", *(getattr(t, "value", str(t)) for t in session.english_turn_subtypes)]
        categories = row_categories(row, session, checker)
        transitions = 0
        for i, task_type in enumerate(types):
            if i and COARSE_TYPE.get(task_type) != COARSE_TYPE.get(types[i - 1]):
                transitions += 1
            task = results[i] if isinstance(results, list) and i < len(results) else None
            correct = isinstance(task, dict) and task.get("label") == "correct"
            records.append(TaskRecord(
                session_id=session.id, task_idx=i, task_type=task_type,
                subtype=subtypes[i] if i < len(subtypes) else "", transitions=transitions,
                correct=correct, category=categories[i],
                optimal=bool(isinstance(task, dict) and task.get("is_optimal") is True and correct),
            ))
    return records


__all__ = ["COARSE_TYPE", "ReportError", "Run", "ScoringError", "TaskRecord", "find_runs", "label_runs",
           "load_runs", "task_records"]
