"""The runner: options → prepare → loop → store → score, for every (session, task) episode in flight at
once, results written per finished session, resumable runs, manifests and progress
(docs/architecture.md). Its rooms follow that order: `setup/` (resolved before the first request),
`loop/` (the hot loop and what it counts), `record/` (what is written, and how a run ends); `job.py`
strings the three together.

- `RunOptions` (setup/options.py): what the user asked; `prepare(options)` (setup/prepare.py): a
  `PreparedRun` holding the frozen `ResolvedRun` (setup/resolved.py) with the source of every value.
- `hashed_config`/`config_hash` (setup/config.py), `config_diff` (contract/config_diff.py): the part that
  must match to resume a run directory.
- `run_job(options)` / `run_job_async(options, backend=None, renderer=None)` (job.py): dataset → run →
  score → files; returns a `RunOutcome` (paths, metric, rows, manifest).
- `SessionRunner` (loop/loop.py), `StepDriver` (loop/steps.py): the loop itself, for callers that bring
  their own episodes/backends.
- `request_seed(run_seed, session_id, task_idx, step)` (loop/seeds.py): per-request sampling seeds.
"""

from __future__ import annotations

from wtb_local.contract.config_diff import config_diff
from wtb_local.contract.errors import RunError
from wtb_local.run.job import RunOutcome, run_job, run_job_async
from wtb_local.run.loop.loop import SessionRunner, resolve_scheduling
from wtb_local.run.loop.seeds import request_id, request_seed
from wtb_local.run.loop.steps import StepDriver, reply_from_parse
from wtb_local.run.setup.config import config_hash, hashed_config
from wtb_local.run.setup.options import RunOptions
from wtb_local.run.setup.paths import RunPaths, run_paths
from wtb_local.run.setup.prepare import PreparedRun, prepare
from wtb_local.run.setup.resolved import ResolvedRun

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
