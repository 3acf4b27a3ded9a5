"""`run --repeats K`: run the K repeats, then print each repeat's health lines (failed requests, length
cuts, calls in reasoning or outside the model's format, as `run` prints them), the mean row and the ± line
(errors as in `run`)."""

from __future__ import annotations

import sys
from pathlib import Path

from wtb_local.runner.setup.options import RunOptions


def run_repeated(options: RunOptions, repeats: int) -> Path:
    """Run the repeats and print them; returns the run directory."""
    from wtb_local.cli.health import health_lines  # deferred: start-up (--help)
    from wtb_local.commands.repeat_runs import run_repeats  # deferred: start-up (--help)
    from wtb_local.reports.present import present  # deferred: start-up (--help)

    outcome = run_repeats(options, repeats)
    print(f"repeats:  {outcome.run_dir / 'repeats'} ({repeats} run directories)")
    print(f"summary:  {outcome.run_dir / 'repeats.json'}")
    for r, one in enumerate(outcome.outcomes):
        health_lines(one, f"repeat {r + 1} (seed {one.settings.seed}): ")
    # the mean row, the paper's row by the recorded thinking mode and the ± line, as `report` shows them
    present(outcome.run_dir, outcome.summary["mean_metric"]).show(sys.stdout)
    return outcome.run_dir
