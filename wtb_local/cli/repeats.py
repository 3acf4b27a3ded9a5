"""`run --repeats K`: run the K repeats, then print the mean row and the ± line (errors as in `run`)."""

from __future__ import annotations

import sys

from wtb_local.runner.options import RunOptions


def run_repeated(options: RunOptions, repeats: int) -> None:
    from wtb_local.reports import metric_row, paper_row, print_tables
    from wtb_local.runner.repeats import error_bar_line, run_repeats
    from wtb_local.runner.thinking import recorded_thinking

    outcome = run_repeats(options, repeats)
    name = str(outcome.summary["mean_metric"].get("model_name"))  # the label `report` gives the run
    print(f"repeats:  {outcome.run_dir / 'repeats'} ({repeats} run directories)")
    print(f"summary:  {outcome.run_dir / 'repeats.json'}")
    # The paper's row follows the thinking mode the prompts had, not the flag (Qwen3 thinks by default).
    first = outcome.outcomes[0]
    thinking = recorded_thinking(first.manifest)
    paper = paper_row(first.settings.model or name, thinking if thinking is not None else options.thinking)
    rows = [metric_row(outcome.summary["mean_metric"], f"{name} (mean of {repeats})")]
    print_tables(rows + ([paper] if paper else []), stream=sys.stdout)
    print(error_bar_line(name, outcome.summary))
