"""`export RUN_DIR... --to inspect DIR | mlflow --tracking-uri URI | leaderboard FILE`: finished runs in the
tools researchers already use (docs/exports.md). The exporters are looked up by name in one registry
(analysis/exports/registry.py), which imports inspect_ai or mlflow only for the exporter asked for. Each
exporter is checked before any run is read (its package, a tracking server that answers), and each export
names, on stderr and in its output, what it could not carry."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from wtb_local.analysis.exports.registry import EXPORTERS, ExportError, Target


def prepared(name: str, target: Target) -> Any:
    """The exporter `name` for `target`, checked (package installed, destination usable); one line else."""
    try:
        exporter = EXPORTERS[name].build(target)
        exporter.check()
    except ExportError as exc:
        raise click.ClickException(str(exc)) from None
    return exporter


def export_runs(name: str, exporter: Any, paths: Sequence[str | Path], dataset: str | None) -> None:
    """Every run (each score set a record) under `paths` through `exporter`: a line per record written and
    a `not carried:` line on stderr for what it could not carry."""
    from wtb_local.analysis.exports.source import load_export_runs  # deferred: start-up (--help)

    try:
        runs = load_export_runs(paths, dataset)
        for run in runs:  # a line the reader dropped (an interrupted write), said as every reader says it
            if run.run.note:
                click.echo(f"note: {run.run.label}: {run.run.note}")
        for exported in exporter.export(runs):
            if exported.missing:
                click.echo(f"not carried: {exported.label}: {'; '.join(exported.missing)}", err=True)
            click.echo(f"{name}: {exported.label}: {exported.where}")
    except ExportError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{exc.filename or exc}: cannot write: {exc.strerror or exc}") from None


@click.command(name="export")
@click.argument("items", nargs=-1, required=True, metavar="RUN_DIR... [DEST]")
@click.option("--to", "target", required=True, type=click.Choice(list(EXPORTERS)),
              envvar="WTB_EXPORT_TO", help="; ".join(f"{e.name}: {e.help}" for e in EXPORTERS.values()) + ".")
@click.option("--tracking-uri", default=None, envvar="WTB_MLFLOW_URI",
              help="--to mlflow: the tracking server or store (http://host:port, sqlite:///file.db); probed "
                   "for a few seconds before anything is read.")
@click.option("--experiment", default="wtb_local", show_default=True, envvar="WTB_MLFLOW_EXPERIMENT",
              help="--to mlflow: the experiment the runs go into (created when missing).")
@click.option("--dataset", default=None, envvar="WTB_DATASET",
              help="Dataset of the scored sessions (sample, release or a file); default: the one each run's "
                   "manifest records. Needed for the harness's own output folders.")
def export(items: tuple[str, ...], target: str, tracking_uri: str | None, experiment: str,
           dataset: str | None) -> None:
    """Export finished runs: an Inspect log per run (DEST: a folder), an MLflow run per run (no DEST), or the
    leaderboard row(s) (DEST: a .csv or .json file). A re-scoring (`rescore`) is a record of its own."""

    entry = EXPORTERS[target]
    dest: str | None = None
    paths = items
    if entry.dest is None:
        if not tracking_uri:
            raise click.UsageError(f"--to {target} needs --tracking-uri URI (or WTB_MLFLOW_URI)")
    elif len(items) < 2:
        raise click.UsageError(f"--to {target} needs RUN_DIR... DEST: DEST is {entry.dest}")
    else:
        paths, dest = items[:-1], items[-1]
    for path in paths:
        if not Path(path).exists():
            raise click.UsageError(f"{path}: no such run directory or file")
    exporter = prepared(target, Target(dest=dest, tracking_uri=tracking_uri, experiment=experiment))
    export_runs(target, exporter, paths, dataset)


for _param in export.params:
    if isinstance(_param, click.Option):
        _param.show_envvar = True
