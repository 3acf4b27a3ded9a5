"""Names a user reads: the run name of a local model directory, and the model a run recorded."""

from __future__ import annotations

import re
from pathlib import Path

from wtb_local.contract.manifest import Manifest
from wtb_local.contract.run_dir import ManifestUnreadable, load_manifest
from wtb_local.run.record.manifest import MANIFEST_NAME

# <hub cache>/models--Org--Name/snapshots/<commit>
_HUB_SNAPSHOT = re.compile(r"models--([^/]+?)--([^/]+)/snapshots/[^/]+/?$")


def default_model_name(model: str) -> str:
    """The model id, or for a local directory a readable name: `Org/Name` for a hub cache snapshot, else
    the directory's own name (not its whole path with `/` turned into `_`)."""
    path = Path(model).expanduser()
    if not (model.startswith(("/", ".", "~")) or path.is_dir()):
        return model
    match = _HUB_SNAPSHOT.search(path.resolve().as_posix())
    if match:
        return f"{match.group(1)}/{match.group(2)}"
    return path.resolve().name or model


def run_dir_of(path: str | Path) -> Path | None:
    """The run directory holding `path` (the directory itself, or a result/score/metric file in it)."""
    path = Path(path).resolve()
    for candidate in (path, *path.parents[:3]):
        if (candidate / MANIFEST_NAME).is_file():
            return candidate
    return None


def read_run_manifest(path: str | Path) -> Manifest | None:
    run_dir = run_dir_of(path)
    if run_dir is None:
        return None
    try:  # a manifest that does not validate is refused, naming the field (ManifestError)
        return load_manifest(run_dir / MANIFEST_NAME)
    except ManifestUnreadable:
        return None  # not JSON: read as a folder without a manifest, as before


def recorded_model(manifest: Manifest) -> tuple[str | None, str | None]:
    """(model id, model name) a manifest records, from its hashed config (every manifest has one)."""
    config = manifest.section("config")
    model = config.get("model")
    name = config.get("model_name") or model
    return (model if isinstance(model, str) else None, name if isinstance(name, str) else None)

