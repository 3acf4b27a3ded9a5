"""The run directory's lock file, as a reader sees it: `run.lock` holds its holder as one JSON line (pid,
host, since); `live_holder` says whether a live process holds it now (docs/reliability.md, "One run per
folder"). Taking the lock is the writer's (runner/record/lock.py)."""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

LOCK_NAME = "run.lock"
RETRY_S = 0.02


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a run directory's lock."""

    pid: int | None
    host: str | None
    since: str | None

    def describe(self) -> str:
        return f"pid {self.pid if self.pid is not None else '?'} on {self.host or '?'} since {self.since or '?'}"


def parse_holder(text: str) -> Holder | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    pid = data.get("pid")
    return Holder(pid if isinstance(pid, int) else None, str(data.get("host") or "") or None,
                  str(data.get("since") or "") or None)


def read_holder(fd: int) -> Holder | None:
    return parse_holder(os.pread(fd, 4096, 0).decode("utf-8", errors="replace"))


def live_holder(run_dir: str | Path) -> Holder | None:
    """The process holding `run_dir` now, None when none does (never blocks)."""
    path = Path(run_dir) / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            # held: its holder writes itself into the file right after locking it
            for _ in range(10):
                holder = read_holder(fd)
                if holder is not None:
                    return holder
                time.sleep(RETRY_S)
            return Holder(None, None, None)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
