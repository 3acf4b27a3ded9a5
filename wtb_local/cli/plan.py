"""`plan ROSTER`: every roster entry's parser, template source, protocol family, paper row, context length
and memory estimate, with ok / warning / error (exit 1 when an entry cannot run as written); `--submit`
then submits the roster to Slurm (docs/roster.md). Offline; imports no torch, vllm or transformers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from wtb_local.cli import cli


@click.command(name="plan")
@click.argument("roster", type=click.Path(exists=True, dir_okay=False))
@click.option("--submit", is_flag=True, default=False, envvar="WTB_ROSTER_SUBMIT",
              help="Submit the roster: one Slurm array per resource class, multi-node entries as their own "
                   "jobs, then the report job (afterany). Refused when an entry has an error.")
@click.option("--dry-run", is_flag=True, default=False, envvar="WTB_ROSTER_DRY_RUN",
              help="With --submit: print the sbatch command lines instead of running them.")
@click.option("--runs-dir", default="runs", show_default=True, envvar="WTB_RUNS_DIR",
              help="Each entry runs into RUNS_DIR/<row>; the report goes to RUNS_DIR/roster-report.")
@click.option("--sbatch-option", "sbatch_options", multiple=True, envvar="WTB_ROSTER_SBATCH_OPTIONS",
              help="Extra sbatch option for every job (repeatable), e.g. --sbatch-option=--partition=gpu.")
@click.option("--gpus-per-node", type=click.IntRange(min=0), default=None, envvar="WTB_ROSTER_GPUS",
              help="With --submit: request this many GPUs per node for every job instead of the resource "
                   "classes' (0: none, e.g. for the oracle backend on a CPU test cluster).")
@click.option("--single-node", is_flag=True, default=False, envvar="WTB_ROSTER_SINGLE_NODE",
              help="With --submit: run multi-node entries as single-node array tasks (a one-node test cluster).")
def plan(roster: str, submit: bool, dry_run: bool, runs_dir: str, sbatch_options: tuple[str, ...],
         gpus_per_node: int | None, single_node: bool) -> None:
    """Check a roster offline (and submit it with --submit)."""
    from wtb_local.analysis.roster.file import RosterError, load_roster  # deferred: start-up (--help)
    from wtb_local.analysis.roster.plan import format_plan, plan_roster  # deferred: start-up (--help)

    try:
        loaded = load_roster(roster)
    except RosterError as exc:
        raise click.ClickException(str(exc)) from None
    plans = plan_roster(loaded)
    click.echo(format_plan(loaded, plans))
    failed = [p.entry.row for p in plans if p.status == "error"]
    if failed:
        click.echo(f"error: {len(failed)} entr{'y' if len(failed) == 1 else 'ies'} cannot run as written: "
                   f"{', '.join(failed)}", err=True)
        sys.exit(1)
    if not submit:  # a plan read before submitting: the work each entry is, and its time where known
        click.echo(_estimate_line(loaded), err=True)
        return
    from wtb_local.analysis.roster.submit import (  # deferred: start-up (--help)
        SubmitError,
        roster_jobs,
        submit_jobs,
    )

    try:
        jobs = roster_jobs(loaded, runs_dir, list(sbatch_options), gpus_per_node=gpus_per_node,
                           single_node=single_node)
        for line in submit_jobs(jobs, dry_run=dry_run):
            click.echo(line)
    except SubmitError as exc:
        raise click.ClickException(str(exc)) from None


def _estimate_line(loaded: Any) -> str:
    """Each entry's work on the release and the time where a rate is recorded (run/loop/estimate.py): the
    entries run vLLM, on GPUs unless every resource class has none."""
    from wtb_local.analysis.reports.present import RELEASE_SESSIONS  # deferred: start-up (--help)
    from wtb_local.run.loop.estimate import estimate  # deferred: start-up (--help)

    gpu = any(res.gpus_per_node for res in loaded.resources.values())
    line = estimate("vllm", 4 * RELEASE_SESSIONS, 512, gpu=gpu).line("vllm on the roster's GPUs" if gpu else
                                                                       "vllm on this machine")
    return line.replace("estimate: ", "estimate per entry (the release, at most 512 new tok a step): ", 1)


@click.command(name="roster-run")
@click.argument("roster", type=click.Path(exists=True, dir_okay=False))
@click.argument("row")
@click.option("--runs-dir", default="runs", show_default=True, envvar="WTB_RUNS_DIR",
              help="The entry runs into RUNS_DIR/<row>.")
def roster_run(roster: str, row: str, runs_dir: str) -> None:
    """Run one roster entry (what each Slurm array task of `plan --submit` runs)."""
    from wtb_local.analysis.roster.file import RosterError, load_roster  # deferred: start-up (--help)
    from wtb_local.analysis.roster.submit import (  # deferred: start-up (--help)
        entry_run_arguments,
        override_arguments,
    )

    try:
        entry = load_roster(roster).entry(row)
    except RosterError as exc:
        raise click.ClickException(str(exc)) from None
    arguments = ["run", *entry_run_arguments(entry, runs_dir), *override_arguments()]
    click.echo(f"roster {roster}: {row}: python -m wtb_local {' '.join(arguments)}", err=True)
    cli.main(args=arguments, prog_name="python -m wtb_local", auto_envvar_prefix="WTB")


@click.command(name="roster-report")
@click.argument("roster", type=click.Path(exists=True, dir_okay=False))
@click.option("--runs-dir", default="runs", show_default=True, envvar="WTB_RUNS_DIR",
              help="Where the entries ran (RUNS_DIR/<row>).")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False), envvar="WTB_ROSTER_REPORT_OUT",
              help="Write roster_report.md and reproduction.csv here (default: RUNS_DIR/roster-report).")
def roster_report(roster: str, runs_dir: str, out_dir: str | None) -> None:
    """The paper's full Table 6/7 with every roster run and its diff, and the reproduction summary."""
    from wtb_local.analysis.roster.file import RosterError, load_roster  # deferred: start-up (--help)
    from wtb_local.analysis.roster.report import build_report, write_report  # deferred: start-up (--help)

    try:
        loaded = load_roster(roster)
    except RosterError as exc:
        raise click.ClickException(str(exc)) from None
    report = build_report(loaded, Path(runs_dir))
    click.echo(report.text)
    out = Path(out_dir) if out_dir else Path(runs_dir) / "roster-report"
    written = write_report(report, out)
    click.echo(f"roster report: {', '.join(str(p) for p in written)}")


for _command in (plan, roster_run, roster_report):
    for _param in _command.params:
        if isinstance(_param, click.Option):
            _param.show_envvar = True
