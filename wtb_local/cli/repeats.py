"""`run --repeats K`: run the K repeats, then print the mean row and the ± line (errors as in `run`)."""

from __future__ import annotations

import sys

from wtb_local.runner.config import RunSettings


def run_repeated(settings: RunSettings, repeats: int) -> None:
    from wtb_local.reports import metric_row, paper_row, print_tables
    from wtb_local.runner.repeats import error_bar_line, run_repeats

    outcome = run_repeats(settings, repeats)
    name = str(outcome.summary["mean_metric"].get("model_name"))  # the label `report` gives the run
    print(f"repeats:  {outcome.run_dir / 'repeats'} ({repeats} run directories)")
    print(f"summary:  {outcome.run_dir / 'repeats.json'}")
    paper = paper_row(settings.model or name, settings.thinking)
    rows = [metric_row(outcome.summary["mean_metric"], f"{name} (mean of {repeats})")]
    print_tables(rows + ([paper] if paper else []), stream=sys.stdout)
    print(error_bar_line(name, outcome.summary))
