"""`explain RUN_DIR RUN_DIR [RUN_DIR...]`: why the numbers of runs of the same tasks differ: the factors
that differ, each flipped task's first point of divergence, the gap one factor at a time, the seed
spread; `explain --plan MODEL`: the runs that measure the usual factors for one model
(docs/explain.md). Imports no torch, vllm or transformers (a re-parse replays recorded completions).
"""

from __future__ import annotations

import click

from wtb_local.engines import engine_backends


@click.command(name="explain")
@click.argument("run_dirs", nargs=-1, type=click.Path(exists=True, file_okay=False))
@click.option("--plan", "plan_model", default=None, metavar="MODEL",
              help="Print the runs that measure the usual factors for MODEL (a shell script) instead.")
@click.option("--runs-dir", default=None, metavar="DIR",
              help="--plan: the folder the planned runs write into (default: runs/explain-<model>).")
@click.option("--engine", default=None, metavar="BACKEND",
              help="--plan: the engine of the baseline runs (default: the first in-process engine backend); "
                   "the other engine is the comparison.")
@click.option("--run-option", "run_options", multiple=True, metavar="OPTION",
              help="--plan: a `run` option added to every planned run (repeatable; split like a shell "
                   "word list), e.g. --run-option '--dataset sample --limit 2'.")
@click.option("--generated-parsers", is_flag=True, default=False,
              help="--plan: also run each alternative parser with generation (its replay judges only the steps "
                   "the baseline generated).")
@click.option("--context-window", type=click.IntRange(min=1), default=None, metavar="TOKENS",
              help="--plan: also a run with this --max-model-len (a deployment with a smaller context window).")
@click.option("--dataset", default=None, envvar="WTB_DATASET",
              help="Dataset of the runs (default: the one each run's manifest records).")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False), envvar="WTB_EXPLAIN_OUT",
              help="Write the explanation files into this directory.")
@click.option("--format", "formats", default="md,csv,json,html,png", show_default=True,
              envvar="WTB_EXPLAIN_FORMAT", help="Comma-separated formats written with --out: md, csv, json, html, png. "
              "Without matplotlib a png asked for here is an error; the default skips it with a note.")
@click.pass_context
def explain(ctx: click.Context, run_dirs: tuple[str, ...], plan_model: str | None, runs_dir: str | None, engine: str | None,
            run_options: tuple[str, ...], generated_parsers: bool, context_window: int | None, dataset: str | None,
            out_dir: str | None, formats: str) -> None:
    """Why the scores of RUN_DIRs (runs of the same tasks) differ, factor by factor, task by task."""
    if plan_model is not None:
        if run_dirs:
            raise click.UsageError("--plan MODEL takes no RUN_DIR")
        from wtb_local.analysis.explain.plan import (  # deferred: start-up (--help)
            PlanError,
            make_plan,
            plan_script,
        )

        try:
            planned = make_plan(plan_model, engines=engine_backends(), runs_dir=runs_dir, engine=engine, run_options=run_options,
                                generated_parsers=generated_parsers, context_window=context_window)
        except PlanError as exc:
            raise click.ClickException(str(exc)) from None
        click.echo(plan_script(planned), nl=False)
        return
    if not run_dirs:
        raise click.UsageError("give two or more RUN_DIRs (or one --repeats run directory), or --plan MODEL")
    from wtb_local.analysis.explain.build import explain_runs  # deferred: start-up (--help)
    from wtb_local.analysis.explain.render import plain, write_explanation  # deferred: start-up (--help)
    from wtb_local.analysis.explain.runs import ExplainError, runs_to_explain  # deferred: start-up (--help)
    from wtb_local.analysis.reports.build import parse_formats, png_refused  # deferred: start-up (--help)
    from wtb_local.contract.errors import RunError  # deferred: start-up (--help)
    from wtb_local.run.job import replay_run  # deferred: start-up (--help)

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
        data = explain_runs(runs_to_explain(run_dirs, dataset), replay_run)
    except (ExplainError, RunError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(plain(data), nl=False)
    if out_dir is None:
        return
    try:
        written = write_explanation(data, out_dir, chosen)
    except OSError as exc:
        raise click.ClickException(f"{exc.filename or out_dir}: cannot write: {exc.strerror or exc}") from None
    for note in written.notes[len(data["notes"]):]:
        click.echo(f"note: {note}")
    click.echo(f"explain: {len(written.files)} file(s) in {out_dir}")


for _param in explain.params:
    if isinstance(_param, click.Option):
        _param.show_envvar = True
