"""Per-request sampling seeds: a pure function of (run seed, session, task, step).

Deriving each request's seed with sha256 instead of drawing from a shared generator makes a rerun (or a
resumed run) give every request the same seed whatever order the requests are served in.
"""

from __future__ import annotations

import hashlib


def request_seed(run_seed: int, session_id: str, task_idx: int, step: int) -> int:
    """A 31-bit seed (every engine accepts it) for one request."""
    key = f"{run_seed}/{session_id}/{task_idx}/{step}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") & 0x7FFFFFFF


def request_id(session_id: str, task_idx: int, step: int) -> str:
    """The stable id of one request; also the key of the deterministic ids of parsed calls."""
    return f"{session_id}/{task_idx}/{step}"
