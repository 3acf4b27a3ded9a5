"""The runner's error types: the two ways the run's own machinery can fail, and a run that ended with
internal errors (docs/reliability.md); a run that cannot start or had to stop is `RunError`
(contract/errors.py)."""

from __future__ import annotations

from wtb_local.contract.errors import RunError


class LoopError(RuntimeError):
    """A callback of the session loop raised (making the episodes, building a session's row, counting its
    labels, reporting progress, a caller's hook): the run stops. The message says what failed, on one line."""


class InternalErrors(RunError):
    """The run ended, but steps met an error of wtb_local's own code (faults.InternalError) and were not
    scored; `exit_code` is the command's (faults.INTERNAL_EXIT_CODE)."""

    def __init__(self, line: str, exit_code: int) -> None:
        super().__init__(line)
        self.exit_code = exit_code
