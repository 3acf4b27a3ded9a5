"""Resuming a run directory: finished sessions are kept only when the run configuration is the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wtb_local.contract.config_diff import config_diff
from wtb_local.contract.errors import RunError
from wtb_local.contract.rows import read_result_lines
from wtb_local.contract.run_dir import ManifestError, as_manifest
from wtb_local.run.record.manifest import read_manifest
from wtb_local.run.setup.config import config_hash
from wtb_local.run.setup.paths import RunPaths


def check_resume(settings: Any, paths: RunPaths, config: dict[str, Any]) -> bool:
    """Whether to keep the finished sessions already in the run directory (True) or start afresh."""
    if settings.overwrite or not settings.resume:
        return False
    if not paths.result_file.exists() or not has_finished_session(paths.result_file):
        # No finished session (a start that failed, a run stopped or failed before its first session
        # finished): the same configuration carries on its record, the invocations so far and the completions
        # an internal error kept (docs/reliability.md, "Internal errors"); a corrected command with a changed
        # configuration starts afresh instead of being refused.
        return same_configuration(paths, config)
    previous = as_manifest(read_manifest(paths.run_dir))  # read through its model
    if previous is None:
        raise RunError(f"{paths.result_file}: results without a manifest (cannot check their configuration);"
                       " pass --no-resume or --overwrite to start afresh")
    if previous.config_hash != config_hash(config):
        lines = config_diff(previous.config.written(), config)
        raise RunError(
            f"{paths.run_dir}: the existing run was made with another configuration; pass --no-resume or "
            "--overwrite to start afresh, or --out DIR for a new run directory. Differences (old -> new):\n  "
            + "\n  ".join(lines or ["(hash differs)"]))
    return True


def same_configuration(paths: RunPaths, config: dict[str, Any]) -> bool:
    """Whether the run directory's manifest was written for `config`; False when there is none or it cannot
    be read (nothing finished depends on it, so the run starts afresh as before)."""
    try:
        previous = as_manifest(read_manifest(paths.run_dir))
    except ManifestError:
        return False
    return previous is not None and previous.config_hash == config_hash(config)


def has_finished_session(result_file: Path) -> bool:
    """Whether the result file holds at least one complete session line (what resuming would keep)."""
    return bool(read_result_lines(result_file).rows)
