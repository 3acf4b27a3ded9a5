"""One run per output folder: an exclusive `flock` on `run.lock` in the run directory (docs/reliability.md,
"One run per folder"). Every command that writes a run directory takes it (`run`, `merge`, `rescore`).

The lock file holds its holder as one JSON line (pid, host, since) so a second run into the folder stops
at once naming it. The kernel drops the lock with the last descriptor of its holder, so a process that is
killed outright (SIGKILL, out of memory, a lost node on a shared file system) leaves only the file: the
next run takes it over and says whose it was. A run that ends by itself removes the file.

Readers (`report`, `score`) ask `live_holder`, which probes with a shared lock for an instant; `acquire`
retries for a moment so such a probe never makes a run refuse to start.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wtb_local.contract.errors import RunError
from wtb_local.contract.paths import LOCK_NAME

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


# --- taking the lock: the writers' side ---------------------------------------------------------------

RUN_ADVICE = "wait for it to end, or pass another --out"
_ACQUIRE_S = 0.3  # how long a run retries a lock held only by a reader's probe

# Descriptors of the locks this process holds: a forked child (an engine process) closes its copies, so a
# lock is never kept alive by a child that outlives its run.
_held: set[int] = set()


def _close_in_child() -> None:
    for fd in list(_held):
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


os.register_at_fork(after_in_child=_close_in_child)


class RunDirLocked(RunError):
    """Another process holds the run directory; the message is one line naming it."""

    def __init__(self, run_dir: Path, holder: Holder, advice: str = RUN_ADVICE) -> None:
        super().__init__(f"{run_dir}: another run is writing this folder ({holder.describe()}); {advice}")
        self.holder = holder


class RunLock:
    """The lock of one run directory. `acquire()` (the holder it took over, if any), then `release()`."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_NAME
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, advice: str = RUN_ADVICE) -> Holder | None:
        """Hold the directory; returns the holder recorded by a process that ended without releasing it
        (None when there was none). Raises RunDirLocked (ending with `advice`) when a live process holds it."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + _ACQUIRE_S
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                holder = read_holder(fd)
                os.close(fd)
                if time.monotonic() < deadline:
                    time.sleep(RETRY_S)
                    continue
                raise RunDirLocked(self.run_dir, holder or Holder(None, None, None), advice) from None
            # The previous holder may have removed the file between our open and our lock: lock the file
            # that is there now, or two runs would each hold a different one.
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        left = read_holder(fd)
        me = {"pid": os.getpid(), "host": socket.gethostname(),
              "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode("utf-8"), 0)
        self._fd = fd
        _held.add(fd)
        return left

    def release(self) -> None:
        """Remove the file, then let go (in that order: a run waiting for the lock locks a new file)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        _held.discard(fd)
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(fd)


@contextlib.contextmanager
def locked(run_dir: str | Path, err: Any = None, advice: str = RUN_ADVICE) -> Iterator[RunLock]:
    """Hold `run_dir` for the block (RunDirLocked, ending with `advice`, when a live process holds it); a
    lock left by a process that ended without releasing it is taken over with a one-line note on `err`."""
    lock = RunLock(run_dir)
    left = lock.acquire(advice)
    try:
        if left is not None:
            print(f"note: {lock.run_dir}: taking over the lock left by {left.describe()}, which ended without "
                  "releasing it", file=err or sys.stderr)
        yield lock
    finally:
        lock.release()
