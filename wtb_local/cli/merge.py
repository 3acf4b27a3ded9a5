"""`merge RUN_DIR`: join the shards of a sharded run (`RUN_DIR/shards/<I>-of-<N>/`, written by
`run --shard`) into RUN_DIR's own result, score, metric and manifest files, then print its table rows.

Missing, unfinished, duplicated or conflicting shards are refused in one line listing them. No torch, vllm
or transformers import: merging is scoring.
"""

from __future__ import annotations

import sys

import click


@click.command(name="merge")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--dataset", envvar="WTB_DATASET",
              help="Dataset file the shards ran on (default: the one their manifests name; its sha256 is "
                   "checked either way).")
@click.option("--thinking/--no-thinking", default=None, envvar="WTB_THINKING",
              help="Which of a Qwen3 model's paper rows to show next to the merged run when its manifest "
                   "records no thinking mode (the recorded effective mode decides otherwise).")
def merge(run_dir: str, dataset: str | None, thinking: bool | None) -> None:
    """Merge the shards of RUN_DIR and score the whole run."""
    from wtb_local.analysis.commands.merge_runs import merge_run  # deferred: start-up (--help)
    from wtb_local.contract.errors import RecordError, RunError  # deferred: start-up (--help)

    try:
        outcome = merge_run(run_dir, dataset=dataset)
    except (RunError, ValueError, RecordError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{exc.filename or run_dir}: {exc.strerror or exc}") from None

    from wtb_local.analysis.reports.present import present  # deferred: start-up (--help)

    paths = outcome.paths
    click.echo(f"merged {len(outcome.shards)} shards, {len(outcome.result_rows)} sessions")
    click.echo(f"result:   {paths.result_file}")
    click.echo(f"score:    {paths.score_dir}")
    click.echo(f"manifest: {paths.manifest}")
    # the paper's row by the thinking mode the shards recorded; --thinking only for manifests without one
    present(paths.run_dir, outcome.metric, manifest=outcome.manifest, thinking=thinking,
            score_rows=outcome.score_rows, sessions=outcome.sessions).show(sys.stdout)


for _param in merge.params:
    if isinstance(_param, click.Option):
        _param.show_envvar = True
