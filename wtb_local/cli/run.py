"""`run` (also options without a command): the main job.

fetch the dataset if needed → run the model on every session (resumable) → score → write the result,
score, metric and manifest files under `runs/<model>/` (or `--out`) → print the Table 6/7 rows next to
the paper's. Every option has a `WTB_*` environment twin; engine flags mirror vLLM's.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Any

import click

from wtb_local.contract.secrets import mask_text, mask_url, url_secrets
from wtb_local.run import RunError, run_job
from wtb_local.run.errors import InternalErrors
from wtb_local.run.loop.stopping import RunInterrupted
from wtb_local.run.loop.throughput import run_end_line
from wtb_local.run.setup.options import click_options, options_from_click


@click.command(name="run")
@click_options
@click.pass_context
def run(ctx: click.Context, /, **params: Any) -> None:  # ctx positional, as click.pass_context passes it
    """Run a model on WildToolBench, score it and print its Table 6 row (the main job)."""
    options = options_from_click(ctx, params)
    repeats = options.repeats
    exporters = _run_exporters(options)  # checked before the run: a missing package, a tracker that is down
    try:
        if repeats > 1:
            from wtb_local.cli.repeats import run_repeated  # deferred: start-up (--help)

            run_dir = run_repeated(options, repeats)
            _export(exporters, run_dir)
            return
        outcome = run_job(options)
    except RunInterrupted as exc:  # Ctrl-C or SIGTERM (e.g. SLURM preemption) while sessions ran
        _exit_interrupted(str(exc))
    except KeyboardInterrupt:  # the same before any session ran
        _exit_interrupted("interrupted: finished sessions are kept; rerun the same command to resume")
    except InternalErrors as exc:  # our own code failed on some steps: a distinct exit code
        click.echo(f"Error: {_masked(str(exc), options)}", err=True)
        sys.exit(exc.exit_code)
    except (RunError, ValueError) as exc:  # DatasetError, ScoringError, TemplateError are ValueErrors
        raise click.ClickException(_masked(str(exc), options)) from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise click.ClickException(_masked(f"{where}{exc.strerror or exc}", options)) from None

    paths = outcome.paths
    click.echo(f"result:   {paths.result_file}")
    click.echo(f"score:    {paths.score_dir}")
    click.echo(f"manifest: {paths.manifest}")
    recorded = outcome.recorded
    line = _throughput_line(outcome)
    if line:
        click.echo(line)
    if recorded.status != "complete":
        click.echo(f"warning: run status {recorded.status}", err=True)
    from wtb_local.analysis.reports.present import present  # deferred: start-up (--help)
    from wtb_local.cli.health import health_lines  # deferred: start-up (--help)

    health = health_lines(outcome)
    # label, paper row (by the recorded thinking mode) and notes as every command shows this run
    shown = present(paths.run_dir, outcome.metric, manifest=outcome.manifest, score_rows=outcome.score_rows,
                    sessions=outcome.sessions)
    shown.show(sys.stdout)
    _save_summary(outcome, shown.rows, [f"note: {note}" for note in shown.notes], health)
    _export(exporters, paths.run_dir)


def _throughput_line(outcome: Any) -> str | None:
    """Measured figures as measured; a replay's and a finished run's rerun marked as read back."""
    block = outcome.recorded.summary.throughput
    replay = getattr(outcome.settings, "replay", None)
    replayed = None
    if replay:
        from wtb_local.contract.recorded import recorded_manifest  # deferred: start-up (--help)

        earlier = recorded_manifest(replay)
        replayed = earlier.summary.throughput if earlier is not None else None
    return run_end_line(block, ran=bool(outcome.ran_sessions), replayed=replayed, replay=bool(replay))


def _run_exporters(options: Any) -> list[tuple[str, str, Any]]:
    """(name, URI, exporter) for each exporter a `run` option asks for (`--mlflow-uri`: the registry's
    `run_option`), each built and checked now, before the run: a missing package or a tracker that cannot
    be reached is one line and nothing runs."""
    from wtb_local.analysis.exports.registry import EXPORTERS, Target  # deferred: start-up (--help)

    asked = [(entry, getattr(options, entry.run_option)) for entry in EXPORTERS.values()
             if entry.run_option and getattr(options, entry.run_option, None)]
    if not asked:
        return []
    from wtb_local.cli.export import prepared  # deferred: start-up (only with an export option)

    return [(entry.name, uri, prepared(entry.name, Target(tracking_uri=uri, uri_option="--" +
                                                          str(entry.run_option).replace("_", "-"))))
            for entry, uri in asked]


def _export(exporters: list[tuple[str, str, Any]], run_dir: Any) -> None:
    """The finished run (each repeat of a `--repeats` run, each score set) as `export` writes it. A tracker
    that fails now is one line and exit 1, naming the `export` command that logs it later; the run
    directory is complete either way."""
    from wtb_local.cli.export import export_runs  # deferred: start-up (only with an export option)

    for name, uri, exporter in exporters:
        try:
            export_runs(name, exporter, [str(run_dir)], None)
        except click.ClickException as exc:
            raise click.ClickException(f"{exc.message}; the run is complete: `python -m wtb_local export {run_dir} "
                                       f"--to {name} --tracking-uri {mask_url(uri)}` logs it later") from None


def _masked(text: str, options: Any) -> str:
    """An error line with every URL masked and the credentials of `--base-url` and `--api-key` replaced by
    `***`, wherever the text quotes them (contract/secrets.py; the backends mask at the source too)."""
    secrets = url_secrets(options.base_url or "") + ((options.api_key,) if options.api_key else ())
    return mask_text(text, secrets)


def _exit_interrupted(line: str) -> None:
    """The one line and exit 130, at once. The record is on disk and the engine closed; the interpreter's
    own shutdown is skipped: its garbage collections walk a large run's every object for seconds after
    the line is printed, and a signal during it would end the process with -2 instead of 130."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    click.echo(line, err=True)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(130)


def _save_summary(outcome: Any, rows: list[Any], notes: list[str], health: list[str]) -> None:
    """The tables, health lines and notes just printed, also in the run folder (summary.md, summary.json)."""
    from wtb_local.analysis.reports.summary_files import write_summary  # deferred: start-up (--help)
    from wtb_local.analysis.reports.table import format_plain  # deferred: start-up (--help)

    text = "\n\n".join(format_plain(rows, table) for table in (6, 7))
    write_summary(outcome.paths.run_dir, rows, text, notes, health)
