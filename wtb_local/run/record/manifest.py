"""The run manifest (`manifest.json` in the run directory): what produced the files next to it.

It holds the hashed run configuration (checked on resume) and the facts needed to reproduce or compare a
run: model id and resolved revision, chat template source and hash, parser, template kwargs, sampling,
seeds, dataset hash, backend settings, package versions, machine and wall times. Each invocation that
adds sessions to the run appends its times to `invocations`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wtb_local.contract.paths import MANIFEST_NAME
from wtb_local.contract.run_dir import ManifestError, check_manifest, load_manifest_data, write_manifest

__all__ = ["ManifestError", "read_manifest", "write_manifest"]


def read_manifest(run_dir: str | Path) -> dict[str, Any] | None:
    """The manifest of a run directory to resume, checked against its model (contract/manifest.py); None
    when there is none. ManifestError (one line naming the field) when it cannot be used."""
    path = Path(run_dir) / MANIFEST_NAME
    try:
        data = load_manifest_data(path)
    except ManifestError as exc:
        raise ManifestError(f"{exc}; use --overwrite to start afresh") from None
    if data is not None and not check_manifest(data, path).config:  # absent, null or empty
        raise ManifestError(f"{path}: field config: missing; use --overwrite to start afresh")
    return data
