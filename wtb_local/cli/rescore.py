"""`rescore RUN_DIR --checker lenient|strict`: re-judge a finished run's arguments with the other argument
checker, without regenerating. The conversation and action verdicts stay as recorded; only argument
verdicts (and what depends on them: labels, AP/OP) change. Writes
`RUN_DIR/score-<checker>/score/<model>/Wild-Tool-Bench_{score.jsonl,metric.json}` with a manifest saying
which checker scored them, and records it in the run manifest's `protocol.rescored`, so `report RUN_DIR`
shows the run under both checkers. A run directory a run is writing is refused (docs/reliability.md, "One
run per folder").

Imports only the scorers (no torch, vllm or transformers).
"""

from __future__ import annotations

from pathlib import Path

import click

from wtb_local.benchmark.protocols import CHECKERS, score_with


@click.command(name="rescore")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--checker", type=click.Choice(sorted(CHECKERS)), required=True, envvar="WTB_CHECKER",
              help="lenient: the paper harness's checker (mean argument score >= 0.7, optional arguments free); "
                   "strict: the released evaluator's.")
@click.option("--dataset", default=None, envvar="WTB_DATASET",
              help="Dataset of the run (default: the path its manifest records; its sha256 must match).")
def rescore(run_dir: str, checker: str, dataset: str | None) -> None:
    """Re-score RUN_DIR's result file with another argument checker (no generation)."""
    from wtb_local.contract.lock_file import RunDirLocked, locked  # deferred: start-up (--help)

    try:
        # it writes the run's manifest: never while a run is writing it
        with locked(run_dir, advice="rescore it when that run has ended"):
            _rescore(run_dir, checker, dataset)
    except RunDirLocked as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:  # a folder it cannot write (its lock, its score files, its manifest)
        raise click.ClickException(f"{exc.filename or run_dir}: cannot write: {exc.strerror or exc}") from None


def _rescore(run_dir: str, checker: str, dataset: str | None) -> None:
    from wtb_local.analysis.reports.present import present, run_facts  # deferred: start-up (--help)
    from wtb_local.benchmark.dataset import DatasetError, dataset_sha256, read_dataset, resolve_dataset
    from wtb_local.benchmark.scoring import ScoringError, load_scorable, write_score_files
    from wtb_local.contract.run_dir import (
        ManifestError,
        RunDir,
        RunDirError,
        load_manifest_data,
        write_manifest,
    )

    found = RunDir(Path(run_dir))
    try:
        recorded_run = found.manifest  # read through its model; the dict below is what is updated and written
        manifest = load_manifest_data(found.manifest_file)
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from None
    if recorded_run is None or manifest is None:
        raise click.ClickException(f"{run_dir}: no manifest.json; rescore reads a run directory written by `run`")
    model_name = str(recorded_run.model_name or "")
    try:
        # the run directory's own result file, never the manifest's recorded path: that names where the run
        # was written, which a copied or moved directory no longer is
        result_file = found.result_file(model_name)
        source = dataset or recorded_run.dataset_path or "release"
        dataset_path = resolve_dataset(source)
        sessions, _warnings = read_dataset(dataset_path)
        recorded = recorded_run.dataset_sha256
        if recorded is not None and recorded != dataset_sha256(dataset_path):
            raise click.ClickException(f"{run_dir}: the run used dataset sha256 {recorded[:12]}..., --dataset "
                                       f"{source} differs; pass the dataset the run used")
        notes: list[str] = []  # an incomplete last line left by an interrupted run, dropped as `run` does
        # the rows as every reader reads them: damaged, foreign, repeated or unknown rows refused in one line
        rows, _name, already = load_scorable(result_file, sessions, model_name, notes)
        if already:
            raise click.ClickException(f"{result_file}: holds score rows, not a run's results")
        for note in notes:
            click.echo(f"note: {note}", err=True)
        score_rows, metric = score_with(checker, rows, sessions, model_name, str(result_file))
        out = found.paths(model_name).rescored(checker).run_dir
        score_path, metric_path = write_score_files(out, model_name, score_rows, metric)
    except (DatasetError, ScoringError, RunDirError) as exc:
        raise click.ClickException(str(exc)) from None

    facts = run_facts(recorded_run)
    protocol, own = facts.protocol, facts.checker
    # The re-scoring's own manifest: the run's, saying which checker scored these files (report reads it).
    derived = {**manifest, "status": "rescored",
               "protocol": {"name": protocol, "checker": checker, "rescore_of": str(Path(run_dir).resolve())}}
    write_manifest(out, derived)
    section = manifest.setdefault("protocol", {"name": protocol, "checker": own})
    section.setdefault("rescored", {})[checker] = {
        "metric": str(metric_path), "task_accuracy": metric["total_info"]["task"]["accuracy"]}
    write_manifest(run_dir, manifest)
    click.echo(f"score:  {score_path}")
    click.echo(f"metric: {metric_path}")
    # labelled `model [protocol-checker]`, with the paper's row, as `report` shows this re-scoring
    present(run_dir, metric, manifest=manifest, checker=checker, score_rows=score_rows, sessions=list(sessions)).show()
