"""The run manifest (`manifest.json` in the run directory): what produced the files next to it.

It holds the hashed run configuration (checked on resume) and the facts needed to reproduce or compare a
run: model id and resolved revision, chat template source and hash, parser, template kwargs, sampling,
seeds, dataset hash, backend settings, package versions, machine and wall times. Each invocation that
adds sessions to the run appends its times to `invocations`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wtb_local.contract.run_dir import ManifestError, ManifestUnreadable, load_manifest_data, write_manifest

__all__ = ["MANIFEST_NAME", "ManifestError", "manifest_near", "read_manifest", "write_manifest"]

MANIFEST_NAME = "manifest.json"


def read_manifest(run_dir: str | Path) -> dict[str, Any] | None:
    """The manifest of a run directory to resume, checked against its model (contract/manifest.py); None
    when there is none. ManifestError (one line naming the field) when it cannot be used."""
    path = Path(run_dir) / MANIFEST_NAME
    try:
        data = load_manifest_data(path)
    except ManifestError as exc:
        raise ManifestError(f"{exc}; use --overwrite to start afresh") from None
    if data is not None and not isinstance(data.get("config"), dict):
        raise ManifestError(f"{path}: field config: missing; use --overwrite to start afresh")
    return data


def manifest_near(path: str | Path) -> dict[str, Any] | None:
    """The manifest of the run a path belongs to: a run directory, or a file in its `result/<model>/` or
    `score/<model>/`; None when there is none or it cannot be read (reports then fall back to flags)."""
    path = Path(path).resolve()
    candidates = [path / MANIFEST_NAME] if path.is_dir() else []
    if len(path.parents) >= 3:
        candidates.append(path.parents[2] / MANIFEST_NAME)
    for candidate in candidates:
        try:  # checked against its model: one that does not validate is refused, naming the field
            data = load_manifest_data(candidate)
        except ManifestUnreadable:
            continue
        if data is not None:
            return data
    return None
