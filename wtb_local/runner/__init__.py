"""The runner: options → prepare → loop → store → score, for every (session, task) episode in flight at
once, results written per finished session, resumable runs, manifests and progress
(docs/architecture.md).

- `RunOptions` (options.py): what the user asked; `prepare(options)` (prepare.py): a `PreparedRun` holding
  the frozen `ResolvedRun` (resolved.py) with the source of every value.
- `hashed_config`/`config_hash`/`config_diff` (config.py): the part that must match to resume a run directory.
- `run_job(options)` / `run_job_async(options, backend=None, renderer=None)`: dataset → run → score →
  files; returns a `RunOutcome` (paths, metric, rows, manifest).
- `SessionRunner`, `StepDriver`: the loop itself, for callers that bring their own episodes/backends.
- `request_seed(run_seed, session_id, task_idx, step)`: per-request sampling seeds.
"""

from __future__ import annotations

from wtb_local.runner.config import config_diff, config_hash, hashed_config
from wtb_local.runner.errors import RunError
from wtb_local.runner.job import RunOutcome, run_job, run_job_async
from wtb_local.runner.loop import SessionRunner, resolve_scheduling
from wtb_local.runner.options import RunOptions
from wtb_local.runner.paths import RunPaths, run_paths
from wtb_local.runner.prepare import PreparedRun, prepare
from wtb_local.runner.resolved import ResolvedRun
from wtb_local.runner.seeds import request_id, request_seed
from wtb_local.runner.steps import StepDriver, reply_from_parse

__all__ = [
    "PreparedRun",
    "ResolvedRun",
    "RunError",
    "RunOptions",
    "RunOutcome",
    "RunPaths",
    "SessionRunner",
    "StepDriver",
    "config_diff",
    "config_hash",
    "hashed_config",
    "prepare",
    "reply_from_parse",
    "request_id",
    "request_seed",
    "resolve_scheduling",
    "run_job",
    "run_job_async",
    "run_paths",
]
