"""What a reader must be told about a run directory whose manifest says `running`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wtb_local.contract.lock_file import live_holder
from wtb_local.contract.manifest import Manifest
from wtb_local.contract.run_dir import as_manifest


def status_note(run_dir: str | Path, manifest: Manifest | dict[str, Any] | None) -> str | None:
    """What a reader must know about a run whose manifest says `running`: that it is still running (the
    live holder of its lock), or that its process died, since nothing holds the lock."""
    manifest = as_manifest(manifest)
    if manifest is None or manifest.status != "running":
        return None
    holder = live_holder(run_dir)
    if holder is not None:
        return (f"{run_dir} is still running ({holder.describe()}): only the sessions finished so far are "
                "counted")
    return (f"{run_dir}: the manifest says running, but no process holds the run: its process died without "
            "closing the record (killed, out of memory, a lost node or a full disk); rerun the same command to "
            "resume")
