"""Sharding one model's run over several processes (a Slurm array): which sessions each shard runs.

`--shard I/N` runs shard I (0-based) of N; `--shard auto` reads the Slurm array task
(`SLURM_ARRAY_TASK_ID`, `SLURM_ARRAY_TASK_MIN`, `SLURM_ARRAY_TASK_STEP`, `SLURM_ARRAY_TASK_COUNT`).
Sessions are spread by expected work, not by count: a session's work is the sum over its tasks of
(gold nodes + 1) model calls times the characters of the prompt those calls carry (tools, environment,
the user turns so far and the earlier tasks' gold calls and observations), so the long sessions do not
all land on one GPU. Greedy longest-first into the least-loaded shard, ties broken by session number and
shard index: every shard computes the same plan from the same selection, with no coordination.

Each shard is an ordinary run directory under `<run dir>/shards/<I>-of-<N>/` (own manifest and result
file, resumable after a requeue); `merge` joins them into the run directory itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from typing_extensions import TypedDict

from wtb_local.contract.shard_dirs import Shard

_SPEC = re.compile(r"(0|[1-9][0-9]*)/([1-9][0-9]*)")


class ShardError(ValueError):
    """A bad --shard value or Slurm array environment; one line that says what to do."""


def parse_shard(spec: str) -> Shard:
    """`I/N` with 0 <= I < N."""
    match = _SPEC.fullmatch(spec.strip())
    if match is None:
        raise ShardError(f"--shard: expected I/N (e.g. 0/4) or auto, got {spec!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if index >= count:
        raise ShardError(f"--shard: index {index} is not below the shard count {count} (shards are 0..{count - 1})")
    return Shard(index, count)


def _env_int(environ: Mapping[str, str], name: str) -> int:
    value = environ.get(name, "")
    if not value.strip().isdigit():
        raise ShardError(f"--shard auto: {name} is {value!r}, not a number; submit with sbatch --array=0-N")
    return int(value)


def shard_from_slurm(environ: Mapping[str, str]) -> Shard:
    """This Slurm array task's shard: its position in the array (which may start above 0 or step)."""
    if not environ.get("SLURM_ARRAY_TASK_ID"):
        raise ShardError("--shard auto: not inside a Slurm array job (SLURM_ARRAY_TASK_ID is unset); "
                         "submit with sbatch --array=0-N or pass --shard I/N")
    task = _env_int(environ, "SLURM_ARRAY_TASK_ID")
    count = _env_int(environ, "SLURM_ARRAY_TASK_COUNT")
    first = _env_int(environ, "SLURM_ARRAY_TASK_MIN") if environ.get("SLURM_ARRAY_TASK_MIN") else 0
    step = _env_int(environ, "SLURM_ARRAY_TASK_STEP") if environ.get("SLURM_ARRAY_TASK_STEP") else 1
    if step < 1 or (task - first) % step or not 0 <= (task - first) // step < count:
        raise ShardError(f"--shard auto: array task {task} is not one of {count} evenly spaced tasks from "
                         f"{first} by {step}; use a contiguous --array=0-{count - 1} (no % or holes)")
    return Shard((task - first) // step, count)


def resolve_shard(spec: str | None, environ: Mapping[str, str] | None = None) -> Shard | None:
    """None (no sharding), `I/N`, or `auto` (the Slurm array task)."""
    if spec is None or not spec.strip():
        return None
    if spec.strip() == "auto":
        return shard_from_slurm(os.environ if environ is None else environ)
    return parse_shard(spec)


def _chars(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False, default=str))


def session_work(session: Any) -> int:
    """Expected work of one session: Σ over tasks of (gold nodes + 1) calls × prompt characters."""
    context = _chars(session.english_tools) + _chars(session.english_env_info)
    work = 0
    for position, task in enumerate(session.english_tasks):
        context += _chars(task)
        nodes = session.english_answer_list[position] if position < len(session.english_answer_list) else []
        work += (len(nodes) + 1) * context
        for node in nodes:  # later tasks carry this task's gold calls and observations in their history
            context += _chars(node.action.model_dump(mode="json")) + _chars(node.observation)
    return work


def _number(session_id: str) -> tuple[int, str]:
    tail = session_id.rsplit("_", 1)[-1]
    return (int(tail) if tail.isdigit() else 1 << 62, session_id)


def plan_shards(sessions: Sequence[Any], count: int) -> list[list[str]]:
    """Session ids per shard (each list in dataset order): longest-first into the least-loaded shard."""
    loads = [0] * count
    plan: list[list[str]] = [[] for _ in range(count)]
    weighted = sorted(((session_work(s), s.id) for s in sessions), key=lambda x: (-x[0], _number(x[1])))
    for work, session_id in weighted:
        target = min(range(count), key=lambda i: (loads[i], i))
        loads[target] += work
        plan[target].append(session_id)
    order = {s.id: position for position, s in enumerate(sessions)}
    return [sorted(ids, key=order.__getitem__) for ids in plan]


def selection_sha256(session_ids: Sequence[str]) -> str:
    """Hash of the whole selection (every shard must split the same sessions)."""
    return hashlib.sha256("\n".join(session_ids).encode("utf-8")).hexdigest()


class ShardRecord(TypedDict):
    """The manifest's `shard`: which shard this is, the selection every shard splits, and this one's part."""

    index: int
    count: int
    selection_sha256: str
    selection_size: int
    sessions: list[str]
    work: int


def shard_sessions(selected: Sequence[Any], shard: Shard) -> tuple[list[Any], ShardRecord]:
    """This shard's sessions, and the manifest record `merge` checks them against."""
    plan = plan_shards(selected, shard.count)
    mine = set(plan[shard.index])
    record: ShardRecord = {
        "index": shard.index,
        "count": shard.count,
        "selection_sha256": selection_sha256([s.id for s in selected]),
        "selection_size": len(selected),
        "sessions": plan[shard.index],
        "work": sum(session_work(s) for s in selected if s.id in mine),
    }
    return [s for s in selected if s.id in mine], record
