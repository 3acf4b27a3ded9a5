"""Which sessions a run takes from its dataset: `--sessions`, then `--limit` (a shard is cut later)."""

from __future__ import annotations

from typing import Any

from wtb_local.contract.errors import RunError


def select_sessions(sessions: list[Any], ids: list[str] | tuple[str, ...] | None, limit: int | None) -> list[Any]:
    """`--sessions` (ids or bare numbers, in dataset order) then `--limit N` (the first N of those)."""
    chosen = sessions
    if ids:
        wanted = {i if not i.isdigit() else f"wild_tool_bench_{i}" for i in (x.strip() for x in ids) if i}
        known = {s.id for s in sessions}
        missing = sorted(wanted - known)
        if missing:
            raise RunError(f"--sessions: not in the dataset: {', '.join(missing)}")
        chosen = [s for s in sessions if s.id in wanted]
    if limit is not None:
        if limit < 1:  # 0 sessions would write an empty run and a 0% row
            raise RunError(f"--limit {limit}: must be at least 1")
        chosen = chosen[:limit]
    return chosen
