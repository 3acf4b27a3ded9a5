"""The runner: every (session, task) episode in flight at once, results written per finished session,
resumable runs, manifests, progress, and the main job (`run_job`).

- `RunSettings`: the run's options; `hashed_config`/`config_hash`/`config_diff`: the part that must match
  to resume a run directory.
- `run_job(settings)` / `run_job_async(settings, backend=None, renderer=None)`: dataset → run → score →
  files; returns a `RunOutcome` (paths, metric, rows, manifest).
- `SessionRunner`, `StepDriver`: the loop itself, for callers that bring their own episodes/backends.
- `request_seed(run_seed, session_id, task_idx, step)`: per-request sampling seeds.
"""

from __future__ import annotations

from typing import Any

from wtb_local.runner.config import RunSettings, config_diff, config_hash, hashed_config
from wtb_local.runner.errors import RunError
from wtb_local.runner.job import RunOutcome, run_job, run_job_async
from wtb_local.runner.loop import SessionRunner, resolve_scheduling
from wtb_local.runner.paths import RunPaths, run_paths
from wtb_local.runner.seeds import request_id, request_seed
from wtb_local.runner.steps import StepDriver, reply_from_parse
from wtb_local.schema import SamplingConfig

__all__ = [
    "RunError",
    "RunOutcome",
    "RunPaths",
    "RunSettings",
    "SessionRunner",
    "StepDriver",
    "config_diff",
    "config_hash",
    "hashed_config",
    "reply_from_parse",
    "request_id",
    "request_seed",
    "resolve_scheduling",
    "run_job",
    "run_job_async",
    "run_paths",
    "settings_from_options",
]


def settings_from_options(options: dict[str, Any]) -> RunSettings:
    """RunSettings from the `run` command's options (click parameter names)."""
    from wtb_local.rendering.kwargs import resolve_template_kwargs

    opts = dict(options)
    try:
        template_kwargs = resolve_template_kwargs(opts.get("model") or "", opts.get("thinking"),
                                                  list(opts.get("template_kwarg") or ()))
    except ValueError as exc:  # the message usually names its option already
        message = str(exc)
        raise RunError(message if message.startswith("--") else f"--template-kwarg: {message}") from None
    by_mode = opts.get("max_new_tokens") is None  # set once the thinking mode is known (prepare_run)
    sampling = SamplingConfig(temperature=opts.get("temperature"), top_p=opts.get("top_p"),
                              max_new_tokens=opts.get("max_new_tokens") or 512, seed=opts.get("seed") or 0)
    fields = {name: opts[name] for name in RunSettings.model_fields if opts.get(name) is not None}
    fields.pop("template_kwargs", None)
    return RunSettings(**fields, template_kwargs=template_kwargs, sampling=sampling,
                       max_new_tokens_by_mode=by_mode)
