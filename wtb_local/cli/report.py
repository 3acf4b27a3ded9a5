"""`report RUN_DIR_OR_METRIC_FILE...`: Table 6 and Table 7 rows of scored runs, side by side, each followed
by the paper's row for the same model when the paper has one."""

from __future__ import annotations

import click


@click.command(name="report")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--table",
    "tables",
    type=click.Choice(["6", "7"]),
    multiple=True,
    envvar="WTB_REPORT_TABLES",
    help="Which table(s) to print (repeatable; default both).",
)
@click.option(
    "--paper/--no-paper",
    default=True,
    show_default=True,
    envvar="WTB_REPORT_PAPER",
    help="Show the paper's row under each run when the paper has the model.",
)
@click.option(
    "--thinking/--no-thinking",
    default=None,
    envvar="WTB_THINKING",
    help="Which of a Qwen3 model's paper rows to show.",
)
def report(paths: tuple[str, ...], tables: tuple[str, ...], paper: bool, thinking: bool | None) -> None:
    """Print the table rows of scored runs (run directories or metric.json files)."""
    from wtb_local.reports import metric_row, paper_row, print_tables
    from wtb_local.runner.naming import model_label
    from wtb_local.scoring import ScoringError, read_metric

    from wtb_local.runner.repeats import error_bar_line, read_summary

    metrics = []
    summaries = [read_summary(path) for path in paths]  # runs with --repeats: the mean row and a ± line
    for path, summary in zip(paths, summaries, strict=True):
        try:
            metrics.append(summary["mean_metric"] if summary else read_metric(path))
        except ScoringError as exc:
            raise click.ClickException(str(exc)) from None
    names = [model_label(path, metric) for path, metric in zip(paths, metrics, strict=True)]  # as `run` shows
    rows = []
    shown_paper: set[str] = set()
    for path, name, metric in zip(paths, names, metrics, strict=True):
        # Runs of one model (sample vs release, two parsers) share a model name: tell them apart by path.
        rows.append(metric_row(metric, f"{name} ({path})" if names.count(name) > 1 else name))
        known = paper_row(name, thinking) if paper else None
        if known is not None and known.label not in shown_paper:
            shown_paper.add(known.label)
            rows.append(known)
    print_tables(rows, tuple(int(t) for t in tables) or (6, 7))
    for name, summary in zip(names, summaries, strict=True):
        if summary:
            click.echo(error_bar_line(name, summary))
