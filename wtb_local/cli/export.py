"""`export RUN_DIR... --to inspect DIR | mlflow --tracking-uri URI | leaderboard FILE`: finished runs in the
tools researchers already use (docs/exports.md). inspect_ai and mlflow are the optional `export` extra,
imported only here and only for the target asked for. Each export names, on stderr and in its output, what
it could not carry."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import click

from wtb_local.contract.install_command import install_command

_PACKAGES = {"inspect": ("inspect_ai", "inspect_ai"), "mlflow": ("mlflow", "mlflow")}


def require(target: str) -> None:
    """One line naming the install command when the target's package is missing."""
    module, package = _PACKAGES[target]
    if importlib.util.find_spec(module) is None:
        raise click.ClickException(f"--to {target}: {package} is not installed ({install_command('export')})")


@click.command(name="export")
@click.argument("items", nargs=-1, required=True, metavar="RUN_DIR... [DEST]")
@click.option("--to", "target", required=True, type=click.Choice(["inspect", "mlflow", "leaderboard"]),
              envvar="WTB_EXPORT_TO", help="inspect: one Inspect log per run into DEST (a folder); mlflow: one "
              "MLflow run per run at --tracking-uri; leaderboard: the benchmark's leaderboard row(s) into DEST "
              "(.csv or .json).")
@click.option("--tracking-uri", default=None, envvar="WTB_MLFLOW_URI",
              help="--to mlflow: the tracking server or store (http://host:port, sqlite:///file.db, a folder).")
@click.option("--experiment", default="wtb_local", show_default=True, envvar="WTB_MLFLOW_EXPERIMENT",
              help="--to mlflow: the experiment the runs go into (created when missing).")
@click.option("--dataset", default=None, envvar="WTB_DATASET",
              help="Dataset of the scored sessions (sample, release or a file); default: the one each run's "
                   "manifest records. Needed for the harness's own output folders.")
def export(items: tuple[str, ...], target: str, tracking_uri: str | None, experiment: str,
           dataset: str | None) -> None:
    """Export finished runs: an Inspect log per run (DEST: a folder), an MLflow run per run (no DEST), or the
    leaderboard row(s) (DEST: a .csv or .json file)."""

    dest: str | None = None
    paths = items
    if target == "mlflow":
        if not tracking_uri:
            raise click.UsageError("--to mlflow needs --tracking-uri URI (or WTB_MLFLOW_URI)")
    elif len(items) < 2:
        what = "a folder for the logs" if target == "inspect" else "a file for the row(s) (.csv or .json)"
        raise click.UsageError(f"--to {target} needs RUN_DIR... DEST: DEST is {what}")
    else:
        paths, dest = items[:-1], items[-1]
    for path in paths:
        if not Path(path).exists():
            raise click.UsageError(f"{path}: no such run directory or file")
    if target in _PACKAGES:
        require(target)
    from wtb_local.analysis.exports.source import ExportError, load_export_runs  # deferred: start-up (--help)

    try:
        runs = load_export_runs(paths, dataset)
        if target == "inspect":
            from wtb_local.analysis.exports.inspect_log import export_inspect  # deferred: start-up (--help)

            for (path, missing), run in zip(export_inspect(runs, dest), runs, strict=True):  # type: ignore[arg-type]
                _not_carried(run.label, missing)
                click.echo(f"inspect: {run.label}: {path}")
        elif target == "mlflow":
            from wtb_local.analysis.exports.mlflow_run import export_mlflow  # deferred: start-up (--help)

            for (run_id, how, missing), run in zip(export_mlflow(runs, tracking_uri, experiment), runs,  # type: ignore[arg-type]
                                                   strict=True):
                _not_carried(run.label, missing)
                click.echo(f"mlflow: {run.label}: run {run_id} {how} in experiment {experiment} at {tracking_uri}")
        else:
            from wtb_local.analysis.exports.leaderboard import (  # deferred: start-up
                leaderboard_row,
                write_leaderboard,
            )

            rows = [leaderboard_row(run) for run in runs]
            path = write_leaderboard(rows, dest)  # type: ignore[arg-type]
            for row, run in zip(rows, runs, strict=True):
                _not_carried(run.label, row["not_carried"])
                marked = row["submission"] + (f" ({'; '.join(row['differs'])})" if row["differs"] else "")
                click.echo(f"leaderboard: {run.label}: {marked}: {path}")
    except ExportError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{exc.filename or dest}: cannot write: {exc.strerror or exc}") from None


def _not_carried(label: str, missing: list[str]) -> None:
    if missing:
        click.echo(f"not carried: {label}: {'; '.join(missing)}", err=True)


for _param in export.params:
    if isinstance(_param, click.Option):
        _param.show_envvar = True
