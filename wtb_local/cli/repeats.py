"""`run --repeats K`: run the K repeats (one engine serves all K; analysis/commands/repeat_runs.py has the seeds and
the summary), then print each repeat's health lines (failed requests, length
cuts, calls in reasoning or outside the model's format, as `run` prints them), the mean row and the ± line
(errors as in `run`)."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wtb_local.analysis.commands.repeat_runs import repeat_seed, summarize
from wtb_local.contract.errors import RunError
from wtb_local.contract.lock_file import locked
from wtb_local.contract.paths import REPEATS_DIR, REPEATS_JSON
from wtb_local.run.job import run_job_async
from wtb_local.run.loop.stopping import RunInterrupted, installed
from wtb_local.run.loop.stopping import current as current_stop
from wtb_local.run.record.run_record import sampling_used
from wtb_local.run.setup.options import RunOptions
from wtb_local.run.setup.prepare import prepare


def run_repeated(options: RunOptions, repeats: int) -> Path:
    """Run the repeats and print them; returns the run directory."""
    from wtb_local.analysis.reports.present import present  # deferred: start-up (--help)
    from wtb_local.cli.health import health_lines  # deferred: start-up (--help)

    outcome = run_repeats(options, repeats)
    print(f"repeats:  {outcome.run_dir / REPEATS_DIR} ({repeats} run directories)")
    print(f"summary:  {outcome.run_dir / REPEATS_JSON}")
    for r, one in enumerate(outcome.outcomes):
        health_lines(one, f"repeat {r + 1} (seed {one.settings.seed}): ")
    # the mean row, the paper's row by the recorded thinking mode and the ± line, as `report` shows them;
    # the mean row's errors hold the seeds' spread and the sessions' together (docs/reports.md "Uncertainty")
    present(outcome.run_dir, outcome.summary["mean_metric"],
            repeats=[(one.score_rows, one.sessions) for one in outcome.outcomes]).show(sys.stdout)
    return outcome.run_dir


@dataclass
class RepeatsOutcome:
    run_dir: Path
    summary: dict[str, Any]
    outcomes: list[Any]


def check_repeats(prep: Any, repeats: int) -> None:
    """Repeats differ only where replies are sampled: refused, in one line, where they cannot differ."""
    if repeats < 2:
        return
    run, caps = prep.run, prep.backend_class.capabilities
    if not caps.samples:
        what = "replays fixed replies" if caps.replays else "does not sample"
        raise RunError(f"--repeats {repeats}: the {run.backend} backend {what}; every repeat would give the "
                       "same replies")
    if run.sampling.temperature == 0:
        raise RunError(f"--repeats {repeats}: greedy decoding (--temperature 0) gives the same replies every "
                       "time; repeats need sampled decoding")
    used = sampling_used(run)
    if used.get("do_sample") is False:
        raise RunError(f"--repeats {repeats}: greedy decoding ({used['source']}: do_sample false) gives the "
                       "same replies every time; pass --temperature above 0 for sampled decoding")


async def run_repeats_async(options: RunOptions, repeats: int, stderr: Any = None) -> RepeatsOutcome:
    err = stderr or sys.stderr
    prep = prepare(options, None, err)
    check_repeats(prep, repeats)
    with locked(prep.paths.run_dir, err):  # one repeats run per folder; each repeat locks its own too
        return await _run_repeats(options, repeats, prep, err)


async def _run_repeats(options: RunOptions, repeats: int, prep: Any, err: Any) -> RepeatsOutcome:
    run_dir = prep.paths.run_dir
    backend = prep.build_backend()
    await backend.start()
    outcomes = []
    stop = current_stop()
    try:
        for r in range(repeats):
            late = stop.next_run() if stop is not None and r else None  # each repeat is stopped as one run is
            if late is not None:
                raise RunInterrupted(
                    f"interrupted by {late} before repeat {r + 1} of {repeats}: {r} repeat(s) recorded in "
                    f"{run_dir / REPEATS_DIR}; rerun the same command to run the rest", late)
            seed = repeat_seed(options.seed, r)
            one = options.model_copy(update={"out": str(run_dir / REPEATS_DIR / str(r)), "seed": seed,
                                             "model_name": prep.run.model_name})
            print(f"repeat {r + 1} of {repeats} (seed {seed})", file=err)
            outcomes.append(await run_job_async(one, backend=backend, renderer=prep.renderer, stderr=err))
    finally:
        await backend.close()
    summary = summarize(run_dir, [o.settings.seed for o in outcomes], [o.metric for o in outcomes])
    return RepeatsOutcome(run_dir, summary, outcomes)


def run_repeats(options: RunOptions, repeats: int, **kwargs: Any) -> RepeatsOutcome:
    with installed():
        return asyncio.run(run_repeats_async(options, repeats, **kwargs))
