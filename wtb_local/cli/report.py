"""`report PATH...`: Table 6 and Table 7 rows of scored runs, side by side, each followed by the paper's row
for the same model and the difference; then, for runs with score (or result) files, the hidden-intention
subtypes, instruction transitions, the error taxonomy (Table 8 layout and every label) and the run's
health. `--out DIR` also writes Markdown, CSV, JSON, a self-contained HTML file with a trajectory browser,
and PNG plots (`--format`).

PATH is a run directory, the benchmark harness's output folder (`score/<model>/`, several models), or a
score, result or metric file. Imports no torch, vllm or transformers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # the reader is imported when the command runs (start-up, --help)
    from wtb_local.analysis.reports.runs import Run


@click.command(name="report")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--table",
    "tables",
    type=click.Choice(["6", "7"]),
    multiple=True,
    envvar="WTB_REPORT_TABLES",
    help="Print only these of Table 6/7 on the terminal (repeatable; default: both and every other table).",
)
@click.option(
    "--paper/--no-paper",
    default=True,
    show_default=True,
    envvar="WTB_REPORT_PAPER",
    help="Show the paper's row and the difference under each run when the paper has the model.",
)
@click.option(
    "--thinking/--no-thinking",
    default=None,
    envvar="WTB_THINKING",
    help="Which of a Qwen3 model's paper rows to show (a run's manifest overrides it).",
)
@click.option(
    "--dataset",
    default=None,
    envvar="WTB_DATASET",
    help="Dataset of the scored sessions (sample, release or a file); default: the one each run's "
    "manifest records. Needed for the harness's own score files.",
)
@click.option(
    "--out",
    "out_dir",
    default=None,
    type=click.Path(file_okay=False),
    envvar="WTB_REPORT_OUT",
    help="Write the report files into this directory.",
)
@click.option(
    "--format",
    "formats",
    default="md,csv,json,html,png",
    show_default=True,
    envvar="WTB_REPORT_FORMAT",
    help="Comma-separated formats written with --out: md, csv, json, html, png. Without matplotlib a png "
    "asked for here is an error; the default skips it with a note.",
)
@click.pass_context
def report(ctx: click.Context, paths: tuple[str, ...], tables: tuple[str, ...], paper: bool,
           thinking: bool | None, dataset: str | None, out_dir: str | None, formats: str) -> None:
    """Print the tables of scored runs and optionally write the full report."""
    from wtb_local.analysis.commands.repeat_runs import error_bar_line  # deferred: start-up (--help)
    from wtb_local.analysis.reports import diff_row, metric_row, print_tables  # deferred: start-up (--help)
    from wtb_local.analysis.reports.build import parse_formats, png_refused, run_notes, write_report
    from wtb_local.analysis.reports.paired import paired_lines  # deferred: start-up (--help)
    from wtb_local.analysis.reports.present import paper_row_of, row_label  # deferred: start-up (--help)
    from wtb_local.analysis.reports.protocols import protocol_notes  # deferred: start-up (--help)
    from wtb_local.analysis.reports.render import section_plain  # deferred: start-up (--help)
    from wtb_local.analysis.reports.runs import ReportError, load_runs  # deferred: start-up (--help)
    from wtb_local.analysis.reports.sections import build_sections  # deferred: start-up (--help)
    from wtb_local.analysis.reports.table import legend_notes, scored_errors  # deferred: start-up (--help)
    from wtb_local.benchmark.scoring import ScoringError  # deferred: start-up (--help)

    try:
        chosen = parse_formats(formats)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--format") from None
    asked = ctx.get_parameter_source("formats") not in (click.core.ParameterSource.DEFAULT,
                                                         click.core.ParameterSource.DEFAULT_MAP)
    refused = png_refused(asked, chosen, out_dir)
    if refused:
        raise click.ClickException(refused)
    try:
        # labelled as every command labels them; a --repeats run adds its mean row
        runs = load_runs(paths, dataset, thinking)
    except (ReportError, ScoringError) as exc:
        raise click.ClickException(str(exc)) from None

    rows = []
    shown_paper: set[str] = set()
    for run in runs:
        errors = scored_errors(run.score_rows, run.sessions, run.metric, run.protocol[1]) if run.summary is None else {}
        ours = metric_row(run.metric, run.label, errors)
        rows.append(ours)
        known = paper_row_of(run.facts) if paper else None  # by the run's recorded thinking mode
        if known is not None:
            if known.label not in shown_paper:
                shown_paper.add(known.label)
                rows.append(known)
            rows.append(diff_row(ours, known))
    print_tables(rows, tuple(int(t) for t in tables) or (6, 7))
    for note in legend_notes(rows, tuple(int(t) for t in tables) or (6, 7)):
        click.echo(f"note: {note}")
    for run in runs:  # a --repeats run: mean ± standard error, as `run --repeats` prints it
        if run.summary is not None:
            click.echo(error_bar_line(row_label(run.facts), run.summary))
    for line in paired_lines(runs):
        click.echo(line)
    _warn_length_cuts(runs)
    for note in protocol_notes(runs, paper):
        click.echo(note)

    sections = build_sections(runs, paper)
    if not tables:  # `--table 6/7` asks for those tables alone
        for section in sections:
            if section.key not in ("table6", "table7"):
                click.echo("\n" + section_plain(section))
    if out_dir is None:
        for note in run_notes(runs, paper):
            click.echo(f"note: {note}")
        return
    try:
        written = write_report(runs, out_dir, chosen, paper, sections)
    except OSError as exc:
        raise click.ClickException(f"{exc.filename or out_dir}: cannot write: {exc.strerror or exc}") from None
    for note in written.notes:
        click.echo(f"note: {note}")
    click.echo(f"report: {len(written.files)} file(s) in {out_dir}")


def _warn_length_cuts(runs: list[Run]) -> None:
    """More than 5% of a run's steps cut at the token limit: the row is the budget's as much as the model's."""
    from wtb_local.benchmark.scoring.length_cuts import (  # deferred: start-up (--help)
        cuts_warning,
        length_cuts,
    )

    for run in runs:
        if run.result_rows is None:
            continue
        budget = run.manifest.sampling.max_new_tokens if run.manifest is not None else None
        warning = cuts_warning(length_cuts(run.result_rows), budget)
        if warning:
            click.echo(f"warning: {run.label}: {warning.removeprefix('warning: ')}", err=True)


for _param in report.params:
    if isinstance(_param, click.Option):
        _param.show_envvar = True
