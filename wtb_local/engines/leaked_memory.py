"""Shared-memory segments an engine's processes leave behind when they exit.

vLLM's engine processes create POSIX shared-memory ring buffers (`multiprocessing.shared_memory`) and unlink
them in a finalizer that does not run when the process is ended at shutdown. The segments stay registered
with this process's resource tracker (the spawned engine processes share it), which unlinks them when this
process exits and prints "resource_tracker: There appear to be N leaked shared_memory objects". After the
engine is shut down, `release_leaked` unlinks and unregisters the segments that appeared while it ran and
that no live process maps any more: a segment another program still uses is always mapped, so it is left
alone.
"""

from __future__ import annotations

import os
from multiprocessing import resource_tracker
from pathlib import Path

SHM_DIR = Path("/dev/shm")
PREFIX = "psm_"  # multiprocessing.shared_memory's names


def segments() -> set[str]:
    """The shared-memory segments multiprocessing created on this machine under this user, by file name."""
    try:
        return {entry.name for entry in SHM_DIR.iterdir()
                if entry.name.startswith(PREFIX) and entry.stat().st_uid == os.getuid()}
    except OSError:  # no /dev/shm (not Linux), or a segment unlinked meanwhile: touch nothing this time
        return set()


def mapped() -> set[str]:
    """Segments some live process maps (read from /proc/*/maps). A process this user may not read is
    another user's (or the container's init): it cannot map this user's segments (`segments` keeps only
    those), so it is skipped."""
    names: set[str] = set()
    marker = f"{SHM_DIR}/{PREFIX}"
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            text = (proc / "maps").read_text(errors="replace")
        except (FileNotFoundError, ProcessLookupError, PermissionError):  # exited meanwhile, or another user's
            continue
        for line in text.splitlines():
            at = line.find(marker)
            if at >= 0:
                names.add(line[at + len(str(SHM_DIR)) + 1:].split()[0])
    return names


def release_leaked(before: set[str]) -> list[str]:
    """Unlink the segments created since `before` that no live process maps, and tell this process's
    resource tracker they are gone; returns their names, sorted."""
    leaked = sorted(segments() - before - mapped())
    tracking = getattr(resource_tracker._resource_tracker, "_fd", None) is not None
    for name in leaked:
        try:
            os.unlink(SHM_DIR / name)
        except FileNotFoundError:
            continue
        if tracking:
            resource_tracker.unregister(f"/{name}", "shared_memory")
    return leaked
