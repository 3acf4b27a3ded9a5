"""Joining a sharded run: `<run dir>/shards/<I>-of-<N>/` → the run directory's own result, score, metric
and manifest files, exactly as a one-process run writes them.

Refused, in one line that lists every offender: a shard folder missing or unfinished, shards of different
counts, shards whose manifests disagree on what decides the results (the hashed run configuration: model
and resolved revision, tokenizer, chat template, parser, sampling, dataset hash, ...; the parser options,
template kwargs, protocol, and the session selection being split), a session present in two shards, a
selected session present in none. A shard whose manifest says `running` is named as still running (with
the process that holds it) or as killed. The run directory is locked while the merged files are written.
"""

from __future__ import annotations

import datetime as dt
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wtb_local.contract.config_diff import config_diff
from wtb_local.contract.errors import RunError
from wtb_local.contract.lock_file import live_holder, locked
from wtb_local.contract.manifest import Manifest
from wtb_local.contract.paths import RunPaths
from wtb_local.contract.rows import session_index
from wtb_local.contract.run_dir import ManifestError, RunDir, write_manifest
from wtb_local.contract.shard_dirs import SHARDS_DIR, Shard, parse_shard_dir

# Manifest entries, besides `config`, that every shard must share.
_AGREED = ("parser_options", "template_kwargs", "protocol")
_LISTED = 8  # offenders named in an error line before "... and K more"


@dataclass
class MergeOutcome:
    paths: RunPaths
    manifest: dict[str, Any]
    metric: dict[str, Any]
    result_rows: list[dict[str, Any]]
    shards: list[str]
    score_rows: list[dict[str, Any]] = field(default_factory=list)
    sessions: list[Any] = field(default_factory=list)  # the dataset's: with score_rows, the uncertainty


def _listing(items: list[str]) -> str:
    shown = ", ".join(items[:_LISTED])
    return shown + (f" and {len(items) - _LISTED} more" if len(items) > _LISTED else "")


def find_shards(run_dir: Path) -> list[tuple[Shard, Path]]:
    """The shard folders of a run directory, by index."""
    folder = run_dir / SHARDS_DIR
    if not folder.is_dir():
        raise RunError(f"{run_dir}: not a sharded run (no {SHARDS_DIR}/ folder; run with --shard I/N first)")
    found = []
    for child in sorted(folder.iterdir()):
        shard = parse_shard_dir(child.name)
        if child.is_dir() and shard is not None:
            found.append((shard, child))
    if not found:
        raise RunError(f"{folder}: no shard folders (<I>-of-<N>)")
    return sorted(found, key=lambda item: (item[0].count, item[0].index))


@dataclass
class _Loaded:
    """A finished shard: its folder's name and path, its manifest (every value merge reads comes from the
    model; what the merged manifest copies is `manifest.as_written()`)."""

    name: str
    path: Path
    manifest: Manifest


def _agreed_view(manifest: Manifest) -> dict[str, Any]:
    view = {"config": manifest.config.written(), "selection_sha256": manifest.shard.selection_sha256}
    written = manifest.as_written()
    view.update({key: written[key] for key in _AGREED if manifest.has(key)})
    return view


def _check_shards(run_dir: Path) -> list[_Loaded]:
    shards = find_shards(run_dir)
    counts = sorted({shard.count for shard, _ in shards})
    if len(counts) > 1:
        raise RunError(f"{run_dir / SHARDS_DIR}: shards of different counts ({_listing([p.name for _, p in shards])});"
                       " remove the folders of the run you abandoned")
    count = counts[0]
    present = {shard.index for shard, _ in shards}
    problems = [f"{i}-of-{count}: missing" for i in range(count) if i not in present]
    loaded = []
    for shard, path in shards:
        holder = live_holder(path)
        if holder is not None:  # whatever its files say so far
            problems.append(f"{shard.dir_name}: still running ({holder.describe()})")
            continue
        try:
            read = _read_shard_manifest(path)
        except ManifestError as exc:
            problems.append(f"{shard.dir_name}: {exc}")
            continue
        if read is None:
            problems.append(f"{shard.dir_name}: no manifest.json (never started)")
            continue
        manifest = read
        status = manifest.status
        if status == "running":
            problems.append(f"{shard.dir_name}: status running, but its process died (rerun or requeue that "
                            "shard: it resumes)")
        elif status != "complete":
            problems.append(f"{shard.dir_name}: status {status} (rerun or requeue that shard: it resumes)")
        recorded = manifest.shard
        if (recorded.index, recorded.count) != (shard.index, shard.count):
            problems.append(f"{shard.dir_name}: its manifest records shard {recorded.index}/{recorded.count}")
        loaded.append(_Loaded(shard.dir_name, path, manifest))
    if problems:
        raise RunError(f"{run_dir}: cannot merge: {_listing(problems)}")
    first = loaded[0]
    conflicts = []
    for other in loaded[1:]:
        for line in config_diff(_agreed_view(first.manifest), _agreed_view(other.manifest)):
            conflicts.append(f"{other.name} vs {first.name}: {line}")
    if conflicts:
        raise RunError(f"{run_dir}: shards disagree, cannot merge: {_listing(conflicts)}")
    return loaded


def _read_shard_manifest(path: Path) -> Manifest | None:
    """A shard's manifest through its model; None when there is none. ManifestError (one line) as `run`
    refuses to resume it: not readable, not valid, or without a `config`."""
    file = RunDir(path).manifest_file
    try:
        manifest = RunDir(path).manifest
    except ManifestError as exc:
        raise ManifestError(f"{exc}; use --overwrite to start afresh") from None
    if manifest is not None and not manifest.config:
        raise ManifestError(f"{file}: field config: missing; use --overwrite to start afresh")
    return manifest


def _merged_rows(run_dir: Path, loaded: list[_Loaded], model_name: str,
                 notes: list[str] | None = None) -> list[dict[str, Any]]:
    from wtb_local.benchmark.scoring import ScoringError, read_result_rows

    owner: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    duplicated = []
    for shard in loaded:
        name = shard.name
        result_file = RunPaths(shard.path, model_name).result_file
        try:
            shard_rows = read_result_rows(result_file, notes)
        except ScoringError as exc:
            raise RunError(str(exc)) from None
        for row in shard_rows:
            session_id = row.get("id")
            if session_id in owner:
                duplicated.append(f"{session_id} ({owner[session_id]}, {name})")
                continue
            owner[str(session_id)] = name
            rows.append(row)
    selection = [sid for shard in loaded for sid in shard.manifest.shard.sessions or []]
    missing = sorted(set(selection) - set(owner), key=session_index)
    problems = ([f"session(s) in two shards: {_listing(duplicated)}"] if duplicated else []) + (
        [f"session(s) in no shard: {_listing(missing)}"] if missing else [])
    size = loaded[0].manifest.shard.selection_size
    if not problems and size is not None and len(owner) != size:
        problems.append(f"{len(owner)} sessions in the shards, {size} selected")
    if problems:
        raise RunError(f"{run_dir}: cannot merge: {'; '.join(problems)}")
    return sorted(rows, key=lambda row: session_index(row["id"]))


def _dataset_sessions(manifest: Manifest, dataset: str | None) -> tuple[list[Any], str]:
    from wtb_local.benchmark.dataset import DatasetError, dataset_sha256, read_dataset, resolve_dataset

    recorded = manifest.config.dataset_sha256
    source = dataset or manifest.dataset_path
    if not source:
        raise RunError("the shards' manifests name no dataset file; pass --dataset PATH")
    try:
        path = resolve_dataset(source)
        sessions, _warnings = read_dataset(path)
        digest = dataset_sha256(path)
    except DatasetError as exc:
        raise RunError(f"{exc} (pass --dataset with the file the shards ran on)") from None
    if recorded and digest != recorded:
        raise RunError(f"{path}: sha256 {digest[:12]}... is not the dataset the shards ran on "
                       f"({recorded[:12]}...); pass --dataset with that file")
    return sessions, str(path)


def merge_run(run_dir: str | Path, *, dataset: str | None = None, err: Any = None) -> MergeOutcome:
    """Check the shards, then write the merged result, score, metric and manifest into `run_dir` (locked
    meanwhile, like a run: contract/lock_file.py)."""
    run_dir = Path(run_dir)
    # the merged files are the run directory's own: one writer at a time
    with locked(run_dir, err, advice="merge when it has ended"):
        return _merge_locked(run_dir, dataset, err or sys.stderr)


def _merge_locked(run_dir: Path, dataset: str | None, err: Any) -> MergeOutcome:
    from wtb_local.benchmark.protocols import protocol_named
    from wtb_local.benchmark.protocols.checkers import score_run
    from wtb_local.benchmark.scoring import write_result_rows
    from wtb_local.benchmark.scoring.length_cuts import length_cuts

    loaded = _check_shards(run_dir)
    first = loaded[0].manifest
    model_name = first.model_name
    if model_name is None:
        raise RunError(f"{RunDir(loaded[0].path).manifest_file}: field config.model_name: missing")
    paths = RunPaths(run_dir, model_name)
    notes: list[str] = []  # a shard's incomplete last line, dropped as its own rerun would drop it
    rows = _merged_rows(run_dir, loaded, model_name, notes)
    for note in notes:
        print(f"note: {note}", file=err)
    sessions, dataset_path = _dataset_sessions(first, dataset)
    write_result_rows(paths.result_file, rows)
    # Judged with the checker of the run's protocol, as the run itself is (run/job.py).
    checker = protocol_named(first.config.protocol).checker
    score_rows, metric = score_run(rows, sessions, model_name, paths, checker=checker)

    # The merged manifest is the first shard's as written (its fields in their order), less the shard's own.
    merged = {key: value for key, value in loaded[0].manifest.as_written().items()
              if key not in ("shard", "invocations", "summary")}
    # Every shard's invocations, as written, tagged: their wall times add up to the run's device time.
    merged["invocations"] = [{**invocation, "shard": shard.name} for shard in loaded
                             for invocation in shard.manifest.written_invocations()]
    merged.update(
        status="complete",
        merged=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        files={"result": str(paths.result_file), "score_dir": str(paths.score_dir)},
        shards={"count": len(loaded), "selection_sha256": first.shard.selection_sha256,
                "parts": [{"dir": str(shard.path), "sessions": shard.manifest.shard.sessions,
                           "work": shard.manifest.shard.work}
                          for shard in loaded]},
        summary={"sessions_scored": len(score_rows), "task_accuracy": metric["total_info"]["task"],
                 "session_accuracy": metric["total_info"]["session"], "length_cuts": length_cuts(rows)},
    )
    merged["dataset"] = {**first.dataset.written(), "path": dataset_path,
                         "sessions_selected": first.shard.selection_size}
    write_manifest(run_dir, merged)
    return MergeOutcome(paths, merged, metric, rows, [shard.name for shard in loaded], score_rows, list(sessions))
