"""The runner's one error type: a run that cannot start or had to stop, with a one-line message (or a
header plus the configuration diff)."""

from __future__ import annotations


class RunError(ValueError):
    """A run that cannot start or had to stop; the message is one line (or a header plus the config diff)."""
