"""Names a user reads: the run name of a local model directory, and the model a run recorded."""

from __future__ import annotations

import re
from pathlib import Path

from wtb_local.contract.manifest import Manifest

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


def recorded_model(manifest: Manifest) -> tuple[str | None, str | None]:
    """(model id, model name) a manifest records, from its hashed config (every manifest has one)."""
    return manifest.config.model, manifest.config.model_name or manifest.config.model
