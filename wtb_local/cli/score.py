"""`score RESULT_FILE`: score a result file with the benchmark's evaluator, write the score and metric
files into `--out DIR` (`DIR/Wild-Tool-Bench_{score.jsonl,metric.json}`, the reference's file names; a run
directory keeps them in the reference's `score/<model>/`), print Table 6/7.

Imports only the scorer (no torch, vllm or transformers): scoring a 1,024-task file takes about a second.
"""

from __future__ import annotations

import click

from wtb_local.resources import DEFAULT_DATASET


@click.command(name="score")
@click.argument("result_file", type=click.Path(dir_okay=False))
@click.option(
    "--dataset",
    "dataset",
    default=DEFAULT_DATASET,
    show_default=True,
    envvar="WTB_DATASET",
    help="Dataset the results belong to: a path, `sample` or `release` (the same default as `run`).",
)
@click.option(
    "--out",
    "out_dir",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    envvar="WTB_OUT",
    help="Directory the score and metric files are written to.",
)
@click.option(
    "--model-name",
    default=None,
    envvar="WTB_MODEL_NAME",
    help="Model name for the metric and folder (default: the rows' model_name, else the folder).",
)
@click.option(
    "--thinking/--no-thinking",
    default=None,
    envvar="WTB_THINKING",
    help="Which of a Qwen3 model's paper rows to show next to ours [default: the thinking mode the run's "
    "manifest records].",
)
def score(
    result_file: str, dataset: str, out_dir: str, model_name: str | None, thinking: bool | None
) -> None:
    """Score RESULT_FILE (a result file, or a score file to re-count) and print its table rows."""
    from wtb_local.dataset import DatasetError, dataset_sha256, read_dataset, resolve_dataset
    from wtb_local.reports import print_tables, report_rows
    from wtb_local.scoring import ScoringError, score_file, write_score_files

    try:
        dataset_path = resolve_dataset(dataset)
        sessions, warnings = read_dataset(dataset_path)
        for warning in warnings:
            click.echo(f"warning: {warning}", err=True)
        _check_recorded_dataset(result_file, dataset_sha256(dataset_path), dataset)
        scored = score_file(result_file, sessions, model_name)
        score_path, metric_path = write_score_files(
            out_dir, scored.model_name, scored.score_rows, scored.metric, nested=False
        )
    except (DatasetError, ScoringError) as exc:
        hint = " (pass --dataset sample or the dataset file the run used)" if "is not in the dataset" in str(exc) else ""
        raise click.ClickException(f"{exc}{hint}") from None
    except OSError as exc:
        raise click.ClickException(
            f"{exc.filename or out_dir}: cannot write: {exc.strerror or exc}"
        ) from None

    if scored.already_scored:
        click.echo(f"{result_file} is a score file: labels re-counted, not scored again", err=True)
    if len(scored.score_rows) < len(sessions):
        click.echo(f"note: {len(scored.score_rows)} of {len(sessions)} sessions in {result_file}", err=True)
    click.echo(f"score:  {score_path}")
    click.echo(f"metric: {metric_path}")
    if thinking is None:
        from wtb_local.runner.manifest import manifest_near
        from wtb_local.runner.thinking import recorded_thinking

        thinking = recorded_thinking(manifest_near(result_file))
    print_tables(report_rows(scored.metric, scored.model_name, thinking))


def _check_recorded_dataset(result_file: str, sha256: str, dataset: str) -> None:
    """Refuse a result file of a run directory whose manifest records another dataset: session ids match
    across datasets (wild_tool_bench_N), so scoring against the wrong one gives wrong labels silently."""
    import json
    from pathlib import Path

    parents = Path(result_file).resolve().parents
    if len(parents) < 3:
        return
    manifest = parents[2] / "manifest.json"  # RUN/result/<model>/Wild-Tool-Bench_result.jsonl
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8"))["config"]["dataset_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # not inside a run directory (a reference result file): nothing to compare with
    if isinstance(recorded, str) and recorded != sha256:
        raise click.ClickException(
            f"{result_file}: its run's {manifest} records dataset sha256 {recorded[:12]}..., but --dataset "
            f"{dataset} has sha256 {sha256[:12]}...; pass the dataset the run used")
