"""`score RUN_DIR_OR_RESULT_FILE`: score a result file with the benchmark's evaluator, write the score and
metric files, print Table 6/7. A run directory (or a result file inside one) is scored against the dataset
its manifest records (another `--dataset` is refused) and written into the run's own `score/<model>/`;
a loose result file is scored against `--dataset` (with a warning that it could not be checked) into
`--out DIR` (`DIR/Wild-Tool-Bench_{score.jsonl,metric.json}`, the reference's file names). A run directory
that a run is still writing is scored as it stands, and its score files are left to that run.

Imports only the scorer (no torch, vllm or transformers): scoring a 1,024-task file takes about a second.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from wtb_local.contract.resources import DEFAULT_DATASET

if TYPE_CHECKING:  # the model is imported where a manifest is read, not at --help
    from wtb_local.contract.manifest import Manifest


@click.command(name="score")
@click.argument("result_file", metavar="RUN_DIR_OR_RESULT_FILE", type=click.Path())
@click.option(
    "--dataset",
    "dataset",
    default=None,
    envvar="WTB_DATASET",
    help="Dataset the results belong to: a path, `sample` or `release` [default: the dataset the run's "
    f"manifest records, else {DEFAULT_DATASET} (the same default as `run`)].",
)
@click.option(
    "--out",
    "out_dir",
    default=None,
    type=click.Path(file_okay=False),
    envvar="WTB_OUT",
    help="Directory the score and metric files are written to [default: the run's own score/<model>/ "
    "folder, else the current directory].",
)
@click.option(
    "--model-name",
    default=None,
    envvar="WTB_MODEL_NAME",
    help="Model name for the metric and folder (default: the run's, else the rows' model_name, else the folder).",
)
@click.option(
    "--thinking/--no-thinking",
    default=None,
    envvar="WTB_THINKING",
    help="Which of a Qwen3 model's paper rows to show next to ours when no run manifest records the "
    "thinking mode (a recorded effective mode always decides).",
)
def score(
    result_file: str, dataset: str | None, out_dir: str | None, model_name: str | None, thinking: bool | None
) -> None:
    """Score a run directory or RESULT_FILE (or re-count a score file) and print its table rows."""
    from wtb_local.analysis.reports.present import present, run_facts  # deferred: start-up (--help)
    from wtb_local.benchmark.dataset import DatasetError, dataset_sha256, read_dataset, resolve_dataset
    from wtb_local.benchmark.protocols.checkers import score_file  # deferred: start-up (--help)
    from wtb_local.benchmark.scoring import ScoringError, model_dir_name, write_score_files
    from wtb_local.contract.lock_file import live_holder  # deferred: start-up (--help)
    from wtb_local.contract.run_dir import ManifestError, RunDir  # deferred: start-up (--help)
    from wtb_local.run.setup.naming import recorded_model

    result_file = _result_file(result_file, model_name)
    found = RunDir.holding(result_file)
    try:  # a manifest that is not JSON is refused like one that does not validate: never read as none
        manifest = found.manifest if found is not None else None
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from None
    run_dir = found.root if found is not None else None
    if manifest is not None and model_name is None:
        model_name = recorded_model(manifest)[1]
    if dataset is None:
        dataset = (manifest.dataset_source or manifest.dataset_path) if manifest is not None else None
        dataset = dataset or DEFAULT_DATASET
    try:
        dataset_path = resolve_dataset(dataset)
        sessions, warnings = read_dataset(dataset_path)
        for warning in warnings:
            click.echo(f"warning: {warning}", err=True)
        if manifest is not None:
            _check_recorded_dataset(result_file, manifest, dataset_sha256(dataset_path), dataset)
        # a run is scored with the checker it records (a --protocol paper run: the lenient one)
        notes: list[str] = []  # an incomplete last line left by an interrupted run, dropped as `run` does
        scored = score_file(result_file, sessions, model_name, checker=run_facts(manifest).checker, notes=notes)
        # a run still writing its folder writes its own score files when it ends (docs/reliability.md)
        live = live_holder(run_dir) if out_dir is None and run_dir is not None else None
        if live is not None:
            written = None
        elif out_dir is None and run_dir is not None:
            target, nested = run_dir, True  # RUN/score/<model>/, where `run` writes them
        else:
            target, nested = Path(out_dir or "."), False
        if live is None:
            written = write_score_files(target, scored.model_name, scored.score_rows, scored.metric, nested=nested)
    except (DatasetError, ScoringError) as exc:
        missing = "is not in the dataset" in str(exc)
        hint = " (pass --dataset sample or the dataset file the run used)" if missing else ""
        raise click.ClickException(f"{exc}{hint}") from None
    except OSError as exc:
        raise click.ClickException(
            f"{exc.filename or out_dir or run_dir}: cannot write: {exc.strerror or exc}"
        ) from None

    for note in notes:
        click.echo(f"note: {note}", err=True)
    if manifest is None:
        click.echo(f"warning: {result_file} has no run manifest next to it: its dataset could not be checked "
                   f"(scored against --dataset {dataset})", err=True)
    if scored.already_scored:
        click.echo(f"{result_file} is a score file: labels re-counted, not scored again", err=True)
    if len(scored.score_rows) < len(sessions):
        click.echo(f"note: {len(scored.score_rows)} of {len(sessions)} sessions in {result_file}", err=True)
    if written is None:
        click.echo(f"note: {run_dir} is being written by a run: no score files written (--out DIR writes "
                   "them elsewhere)", err=True)
    else:
        click.echo(f"score:  {written[0]}")
        click.echo(f"metric: {written[1]}")
    # label, paper row (by the recorded thinking mode; --thinking where none is recorded) and notes as
    # every command shows this run
    present(run_dir, scored.metric, manifest=manifest, name=None if manifest else model_dir_name(scored.model_name),
            thinking=thinking, score_rows=scored.score_rows, sessions=list(sessions)).show()

def _result_file(path: str, model_name: str | None) -> str:
    """A run directory's result file (like `report` and `--replay` take a run directory), or `path`."""
    from wtb_local.contract.recorded import ReplayError, find_result_file  # deferred: start-up (--help)

    try:
        return str(find_result_file(path, model_name))
    except ReplayError as exc:
        raise click.ClickException(str(exc)) from None


def _check_recorded_dataset(result_file: str, manifest: Manifest, sha256: str, dataset: str) -> None:
    """Refuse a result file of a run directory whose manifest records another dataset: session ids match
    across datasets (wild_tool_bench_N), so scoring against the wrong one gives wrong labels silently."""
    recorded = manifest.dataset_sha256
    if recorded is not None and recorded != sha256:
        raise click.ClickException(
            f"{result_file}: its run's manifest records dataset sha256 {recorded[:12]}..., but --dataset "
            f"{dataset} has sha256 {sha256[:12]}...; pass the dataset the run used")
