"""`export --to leaderboard`: the benchmark's leaderboard row, marked standard or custom (a subset such
as the sample or a shard custom, naming what differs; docs/exports.md). The expected figures are the
reference implementation's metric file of the golden vectors, which both runs here score: the recorded harness run itself and the
full-release run (the vectors' replies over 256 sessions, each vector four times)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.exports.runs import VECTORS, full_release_run, oracle_demo, recorded_run, wtb


def _reference_row() -> dict[str, str]:
    """The vectors' metric file as the leaderboard prints it (%, two decimals), read by the reference's
    own field names."""
    metric = json.loads((VECTORS / "metric.json").read_text())
    types, layers, total = metric["task_type_info"], metric["layer_info"], metric["total_info"]
    values = {"single": types["Single-Tool"], "multi": types["Multi-Tool"], "clarify": types["Clarify"],
              "chat": types["Chat"], **{f"order{i + 1}": layers[str(i)] for i in range(4)},
              "task_acc": total["task"], "session_acc": total["session"]}
    return {column: f"{100 * bucket['accuracy']:.2f}" for column, bucket in values.items()}


def test_the_reference_row_is_what_the_paper_table_would_print() -> None:
    assert _reference_row() == {"single": "47.37", "multi": "46.72", "clarify": "60.53", "chat": "72.09",
                                "order1": "57.81", "order2": "53.12", "order3": "53.12", "order4": "48.44",
                                "task_acc": "53.12", "session_acc": "4.69"}


def test_the_oracle_demo_on_the_sample_is_a_custom_row_naming_the_subset(tmp_path: Path) -> None:
    run = oracle_demo(tmp_path, limit=2)
    out = tmp_path / "row.json"
    done = wtb(["export", str(run), "--to", "leaderboard", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    differs = ["dataset sample (standard: the pinned release)", "2 sessions / 8 tasks scored (standard: 256 / 1024)"]
    assert done.stdout == f"leaderboard: Qwen_Qwen3-8B: custom ({'; '.join(differs)}): {out}\n"
    (entry,) = json.loads(out.read_text())["rows"]
    assert (entry["submission"], entry["differs"], entry["sessions"], entry["tasks"]) == ("custom", differs, 2, 8)
    assert entry["row"]["task_acc"] == 100.0  # the oracle answers every task with its gold reply


def test_a_recorded_harness_run_is_custom_and_says_what_differs(tmp_path: Path) -> None:
    run, dataset = recorded_run(tmp_path)
    out = tmp_path / "row.csv"
    done = wtb(["export", str(run), "--dataset", str(dataset), "--to", "leaderboard", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    differs = ("no run manifest (protocol, checker and dataset unknown); 64 sessions / 256 tasks scored "
               "(standard: 256 / 1024)")
    assert done.stdout == f"leaderboard: scripted: custom ({differs}): {out}\n"
    (row,) = list(csv.DictReader(out.open()))
    table = {key: value for key, value in row.items() if not key.endswith(("_se", "_low", "_high", "_n"))}
    assert table == {"model": "scripted", **_reference_row(), "submission": "custom", "differs": differs,
                     "not_carried": ""}
    # then each column's uncertainty: session accuracy's textbook binomial standard error and Wilson interval,
    # 3 of 64 sessions: sqrt(3/64 * 61/64 / 64) = 2.64, (1.61, 12.90); task accuracy's clustered by session
    assert list(row)[len(table):] == [f"{c}_{f}" for c in _reference_row() for f in ("se", "low", "high", "n")]
    assert [row[f"session_acc_{f}"] for f in ("se", "low", "high", "n")] == ["2.64", "1.61", "12.90", "64"]
    assert (row["task_acc_se"], row["task_acc_n"]) == ("2.97", "256")
    assert all(float(row[f"{c}_low"]) <= float(row[c]) <= float(row[f"{c}_high"]) for c in _reference_row())


@pytest.mark.slow
def test_a_full_release_run_is_standard_and_a_subset_or_a_shard_is_not(tmp_path: Path) -> None:
    run = full_release_run(tmp_path)
    out = tmp_path / "row.json"
    done = wtb(["export", str(run), "--to", "leaderboard", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"leaderboard: Qwen_Qwen3-8B: standard: {out}\n"
    written = json.loads(out.read_text())
    assert written["columns"] == ["model", "single", "multi", "clarify", "chat", "order1", "order2", "order3",
                                  "order4", "task_acc", "session_acc"]
    (entry,) = written["rows"]
    assert entry["row"] == {"model": "Qwen/Qwen3-8B", **{k: float(v) for k, v in _reference_row().items()}}
    assert (entry["submission"], entry["differs"], entry["sessions"], entry["tasks"]) == ("standard", [], 256, 1024)
    assert (entry["protocol"], entry["checker"], entry["not_carried"]) == ("release", "strict", [])

    # the same run re-judged with the paper harness's lenient checker: custom, naming the checker
    rescored = wtb(["rescore", str(run), "--checker", "lenient"], tmp_path)
    assert rescored.returncode == 0, rescored.stderr
    done = wtb(["export", str(run / "score-lenient"), "--to", "leaderboard", str(tmp_path / "lenient.json")],
               tmp_path)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads((tmp_path / "lenient.json").read_text())["rows"]
    assert (entry["submission"], entry["checker"]) == ("custom", "lenient")
    assert entry["differs"] == ["checker lenient (a re-scoring) (standard: strict)"]

    # the first 10 sessions of the release: custom, naming the count
    subset = full_release_run(tmp_path, ["--limit", "10"], name="subset")
    done = wtb(["export", str(subset), "--to", "leaderboard", str(tmp_path / "subset.json")], tmp_path)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads((tmp_path / "subset.json").read_text())["rows"]
    assert entry["submission"] == "custom"
    assert entry["differs"] == ["10 sessions / 40 tasks scored (standard: 256 / 1024)"]

    # one shard of a sharded run: custom, naming the shard and its count
    sharded = full_release_run(tmp_path, ["--shard", "0/2"], name="sharded")
    shard = sharded / "shards" / "0-of-2"
    done = wtb(["export", str(shard), "--to", "leaderboard", str(tmp_path / "shard.json")], tmp_path)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads((tmp_path / "shard.json").read_text())["rows"]
    assert entry["submission"] == "custom"
    counts = f"{entry['sessions']} sessions / {entry['tasks']} tasks scored (standard: 256 / 1024)"
    assert entry["differs"] == [counts, "shard 0 of 2 of a sharded run (standard: all shards merged)"]


def test_the_json_row_carries_each_columns_uncertainty(tmp_path: Path) -> None:
    """The recorded harness run (64 sessions, 256 tasks): its task accuracy's standard error clustered by
    session, 2.97 points (docs/reports.md "Uncertainty", the same figure `report` prints), and session
    accuracy's binomial one, sqrt(3/64 * 61/64 / 64) = 2.6421."""
    run, dataset = recorded_run(tmp_path)
    out = tmp_path / "row.json"
    done = wtb(["export", str(run), "--dataset", str(dataset), "--to", "leaderboard", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    uncertainty = json.loads(out.read_text())["rows"][0]["uncertainty"]
    assert list(uncertainty) == list(_reference_row())
    assert {key: uncertainty["task_acc"][key] for key in ("se", "n", "sessions")} == {
        "se": 2.9725, "n": 256, "sessions": 64}
    assert (uncertainty["session_acc"]["se"], uncertainty["session_acc"]["n"]) == (2.6421, 64)


def test_mlflow_logs_each_columns_standard_error(tmp_path: Path) -> None:
    """The metrics MLflow is given (no server needed to build them): each column's value and its `.se`, the
    figure `report` prints for the recorded harness run."""
    from wtb_local.analysis.exports.mlflow_run import metrics_of
    from wtb_local.analysis.exports.source import load_export_runs

    run, dataset = recorded_run(tmp_path)
    (found,) = load_export_runs([str(run)], str(dataset))
    metrics = metrics_of(found)
    assert (round(metrics["table6.task_acc"], 2), round(metrics["table6.task_acc.se"], 2)) == (53.12, 2.97)
    assert round(metrics["table6.single.se"], 2) == 9.08 and round(metrics["table7.ap_overall.se"], 2) == 2.75
    assert {name.removesuffix(".se") for name in metrics if name.endswith(".se")} <= set(metrics)
