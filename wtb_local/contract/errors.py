"""The errors of a command on a run directory, shared by the commands that write one (`run`, `merge`,
`rescore`): a command that cannot start or had to stop, with a one-line message (or a header plus the
configuration diff), and a failed write of the run's record (docs/reliability.md)."""

from __future__ import annotations

import errno
from pathlib import Path

# Errors that mean the file system has no room left (a full disk, a used-up quota).
_FULL = (errno.ENOSPC, errno.EDQUOT)


class RunError(ValueError):
    """A run that cannot start or had to stop; the message is one line (or a header plus the config diff)."""


def one_line(exc: BaseException) -> str:
    """`Type: message` on one line."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


class RecordError(RuntimeError):
    """Writing the run's record (the result file, the manifest, the score files) failed: a full disk, a lost
    mount, an error in the writer thread. `path` is the file, `cause` the error."""

    def __init__(self, path: str | Path, cause: BaseException) -> None:
        self.path = Path(path)
        self.cause = cause
        # an OSError as `[Errno 28] No space left on device` (the file is named once, above)
        self.reason = (f"[Errno {cause.errno}] {cause.strerror}" if isinstance(cause, OSError) and cause.strerror
                       else one_line(cause))
        super().__init__(f"writing {self.path} failed ({' '.join(self.reason.split())})")

    @property
    def disk_full(self) -> bool:
        return isinstance(self.cause, OSError) and self.cause.errno in _FULL
