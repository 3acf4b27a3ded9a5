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

The names are loaded when first asked for (module `__getattr__`), so importing one module of the runner
(`wtb_local.run.setup.options`, say) does not import all of it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names for a type checker; at run time `__getattr__` loads each when asked
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

# name -> the module that holds it
_EXPORTS = {
    "config_diff": "wtb_local.contract.config_diff",
    "RunError": "wtb_local.contract.errors",
    "RunOutcome": "wtb_local.run.job",
    "run_job": "wtb_local.run.job",
    "run_job_async": "wtb_local.run.job",
    "SessionRunner": "wtb_local.run.loop.loop",
    "resolve_scheduling": "wtb_local.run.loop.loop",
    "request_id": "wtb_local.run.loop.seeds",
    "request_seed": "wtb_local.run.loop.seeds",
    "StepDriver": "wtb_local.run.loop.steps",
    "reply_from_parse": "wtb_local.run.loop.steps",
    "config_hash": "wtb_local.run.setup.config",
    "hashed_config": "wtb_local.run.setup.config",
    "RunOptions": "wtb_local.run.setup.options",
    "RunPaths": "wtb_local.run.setup.paths",
    "run_paths": "wtb_local.run.setup.paths",
    "PreparedRun": "wtb_local.run.setup.prepare",
    "prepare": "wtb_local.run.setup.prepare",
    "ResolvedRun": "wtb_local.run.setup.resolved",
}

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


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
