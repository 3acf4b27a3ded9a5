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
from wtb_local.contract.run_dir import as_manifest


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


def _rescore(run_dir: str, checker: str, dataset: str | None) -> None:
    from wtb_local.analysis.reports.present import present, run_facts  # deferred: start-up (--help)
    from wtb_local.benchmark.dataset import DatasetError, dataset_sha256, read_dataset, resolve_dataset
    from wtb_local.benchmark.scoring import ScoringError, read_result_rows, write_score_files
    from wtb_local.run.record.manifest import ManifestError, read_manifest, write_manifest

    try:
        manifest = read_manifest(run_dir)
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from None
    if manifest is None:
        raise click.ClickException(f"{run_dir}: no manifest.json; rescore reads a run directory written by `run`")
    recorded_run = as_manifest(manifest)  # read through its model; the dict is what is updated and written
    config = recorded_run.section("config")
    model_name = str(recorded_run.model_name or "")
    # the run directory's own result file: the manifest's path names where the run was written, which a
    # copied or moved directory no longer is
    result_file = Path(run_dir) / "result" / model_name.replace("/", "_") / "Wild-Tool-Bench_result.jsonl"
    if not result_file.exists():
        result_file = Path(str(recorded_run.section("files").get("result", "")))
    try:
        source = dataset or recorded_run.dataset_path or "release"
        dataset_path = resolve_dataset(source)
        sessions, _warnings = read_dataset(dataset_path)
        recorded = config.get("dataset_sha256")
        if isinstance(recorded, str) and recorded != dataset_sha256(dataset_path):
            raise click.ClickException(f"{run_dir}: the run used dataset sha256 {recorded[:12]}..., --dataset "
                                       f"{source} differs; pass the dataset the run used")
        notes: list[str] = []  # an incomplete last line left by an interrupted run, dropped as `run` does
        rows = read_result_rows(result_file, notes)
        for note in notes:
            click.echo(f"note: {note}", err=True)
        score_rows, metric = score_with(checker, rows, sessions, model_name, str(result_file))
        out = Path(run_dir) / f"score-{checker}"
        score_path, metric_path = write_score_files(out, model_name, score_rows, metric)
    except (DatasetError, ScoringError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{exc.filename or run_dir}: {exc.strerror or exc}") from None

    facts = run_facts(manifest)
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
