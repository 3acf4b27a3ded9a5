"""The main job end to end through the CLI with the scripted backend on the golden vectors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.conftest import (
    METRIC_NAME,
    RESULT_NAME,
    SCORE_NAME,
    VECTORS,
    invoke,
    read_jsonl,
    run_files,
    scripted_args,
    without_timing,
)


def _task_labels(task: dict) -> dict:
    log = task["inference_log"]
    steps = {
        k: v["inference_output"].get("current_action_arguments_label")
        for k, v in log.items()
        if k.startswith("step_")
    }
    return {
        "label": task["label"],
        "action_name_label": task["action_name_label"],
        "action_arguments_label": task.get("action_arguments_label", "<absent>"),
        "is_optimal": task["is_optimal"],
        "steps": steps,
    }


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scripted") / "run"
    result = invoke(scripted_args(out))
    assert result.exit_code == 0, result.output
    return out


def test_score_and_metric_files_equal_the_vectors(full_run: Path) -> None:
    files = run_files(full_run, "scripted")
    assert files["metric"] == json.loads((VECTORS / "metric.json").read_text())
    assert list(files["metric"]) == list(json.loads((VECTORS / "metric.json").read_text()))
    expected = {row["id"]: row for row in read_jsonl(VECTORS / "score.jsonl")}
    assert [row["id"] for row in files["score"]] == [f"wild_tool_bench_{i}" for i in range(64)]
    for row in files["score"]:
        want = expected[row["id"]]["results"]
        assert [_task_labels(t) for t in row["results"]] == [_task_labels(t) for t in want], row["id"]


def test_result_file_matches_reference_loop(full_run: Path) -> None:
    rows = run_files(full_run, "scripted")["result"]
    reference = {row["id"]: row for row in read_jsonl(VECTORS / "result.jsonl")}
    assert [r["id"] for r in rows] == sorted(reference, key=lambda i: int(i.rsplit("_", 1)[1]))
    for row in rows:
        for ours, ref in zip(row["result"], reference[row["id"]]["result"], strict=True):
            assert ours["action_name_label"] == ref["action_name_label"]
            assert ours["is_optimal"] == ref["is_optimal"]
            assert sorted(k for k in ours["inference_log"] if k.startswith("step_")) == sorted(
                k for k in ref["inference_log"] if k.startswith("step_")
            )


def test_manifest_records_the_run(full_run: Path) -> None:
    manifest = json.loads((full_run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert len(manifest["config_hash"]) == 64
    assert manifest["config"]["backend"] == "scripted"
    assert manifest["config"]["script_sha256"]
    assert len(manifest["config"]["dataset_sha256"]) == 64 and "sha256" not in manifest["dataset"]  # one place
    assert manifest["dataset"]["sessions_selected"] == 64
    assert manifest["packages"]["pydantic"]
    assert "api_key" not in manifest["settings"]
    (invocation,) = manifest["invocations"]
    assert invocation["sessions_run"] == 64 and invocation["wall_s"] >= 0
    assert manifest["summary"]["task_accuracy"]["correct_count"] == 136


def test_score_command_rescores_the_run_to_the_same_metric(full_run: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from wtb_local.cli import cli

    result_file = full_run / "result" / "scripted" / RESULT_NAME
    out = CliRunner().invoke(
        cli, ["score", str(result_file), "--dataset", str(VECTORS / "dataset.jsonl"), "--out", str(tmp_path)]
    )
    assert out.exit_code == 0, out.output
    assert (
        json.loads((tmp_path / METRIC_NAME).read_text())
        == run_files(full_run, "scripted")["metric"]
    )


def test_limit_and_sessions_select(tmp_path: Path) -> None:
    assert invoke(scripted_args(tmp_path / "a", "--limit", "3")).exit_code == 0
    assert [r["id"] for r in run_files(tmp_path / "a", "scripted")["result"]] == [
        "wild_tool_bench_0",
        "wild_tool_bench_1",
        "wild_tool_bench_2",
    ]
    assert invoke(scripted_args(tmp_path / "b", "--sessions", "7,wild_tool_bench_5")).exit_code == 0
    files = run_files(tmp_path / "b", "scripted")
    assert [r["id"] for r in files["result"]] == ["wild_tool_bench_5", "wild_tool_bench_7"]
    assert files["metric"]["total_info"]["session"]["total_count"] == 2
    bad = invoke(scripted_args(tmp_path / "c", "--sessions", "wild_tool_bench_999"))
    assert bad.exit_code == 1 and "wild_tool_bench_999" in bad.output


def test_resume_skips_finished_sessions_and_gives_the_same_files(tmp_path: Path) -> None:
    assert invoke(scripted_args(tmp_path / "split", "--limit", "3")).exit_code == 0
    second = invoke(scripted_args(tmp_path / "split", "--limit", "6"))
    assert second.exit_code == 0, second.output
    assert "3 finished session(s) skipped, 3 to run" in second.output
    assert invoke(scripted_args(tmp_path / "whole", "--limit", "6")).exit_code == 0
    assert without_timing(run_files(tmp_path / "split", "scripted")) == without_timing(
        run_files(tmp_path / "whole", "scripted")
    )
    manifest = json.loads((tmp_path / "split" / "manifest.json").read_text())
    assert [i["sessions_run"] for i in manifest["invocations"]] == [3, 3]


def test_partial_last_line_is_dropped_on_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert invoke(scripted_args(out, "--limit", "2")).exit_code == 0
    result_file = out / "result" / "scripted" / RESULT_NAME
    text = result_file.read_text()
    result_file.write_text(text + text.splitlines()[0][:500])  # a session cut mid-write
    again = invoke(scripted_args(out, "--limit", "3"))
    assert again.exit_code == 0, again.output
    assert "dropped 1 incomplete line" in again.output
    assert [r["id"] for r in read_jsonl(result_file)] == [f"wild_tool_bench_{i}" for i in range(3)]


def test_config_mismatch_is_refused_with_a_diff(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert invoke(scripted_args(out, "--limit", "2")).exit_code == 0
    refused = invoke(scripted_args(out, "--limit", "2", "--seed", "3", "--max-new-tokens", "64"))
    assert refused.exit_code == 1
    assert "another configuration" in refused.output
    assert "sampling.seed: 0 -> 3" in refused.output
    assert "sampling.max_new_tokens: 512 -> 64" in refused.output
    for flag in ("--no-resume", "--overwrite"):
        fresh = invoke(scripted_args(out, "--limit", "2", "--seed", "3", "--max-new-tokens", "64", flag))
        assert fresh.exit_code == 0, fresh.output
        assert "skipped" not in fresh.output
    assert json.loads((out / "manifest.json").read_text())["config"]["sampling"]["seed"] == 3


def test_results_without_manifest_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert invoke(scripted_args(out, "--limit", "1")).exit_code == 0
    (out / "manifest.json").unlink()
    refused = invoke(scripted_args(out, "--limit", "1"))
    assert refused.exit_code == 1 and "without a manifest" in refused.output


def test_every_option_has_an_explicit_env_twin() -> None:
    from wtb_local.cli.run import run

    for param in run.params:
        if param.name == "help":
            continue
        assert param.envvar == "WTB_" + param.name.upper(), param.name


def test_env_twins_drive_the_run(tmp_path: Path) -> None:
    env = {
        "WTB_BACKEND": "scripted",
        "WTB_SCRIPT": str(VECTORS / "script.jsonl"),
        "WTB_DATASET": str(VECTORS / "dataset.jsonl"),
        "WTB_MODEL_NAME": "env/model",
        "WTB_OUT": str(tmp_path / "env"),
        "WTB_SESSIONS": "4,6",
        "WTB_PROGRESS": "none",
        "WTB_SEED": "5",
        "WTB_MAX_NEW_TOKENS": "77",
    }
    result = invoke([], env=env)
    assert result.exit_code == 0, result.output
    rows = read_jsonl(tmp_path / "env" / "result" / "env_model" / RESULT_NAME)
    assert [r["id"] for r in rows] == ["wild_tool_bench_4", "wild_tool_bench_6"]
    assert {r["model_name"] for r in rows} == {"env/model"}
    config = json.loads((tmp_path / "env" / "manifest.json").read_text())["config"]
    assert config["sampling"]["seed"] == 5 and config["sampling"]["max_new_tokens"] == 77
    assert (tmp_path / "env" / "score" / "env_model" / SCORE_NAME).exists()


def test_options_without_a_command_mean_run(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "wtb_local", *scripted_args(tmp_path / "main", "--limit", "1")]
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "NO_COLOR": "1"}
    )
    assert done.returncode == 0, done.stderr
    assert "Table 6" in done.stdout and "scripted" in done.stdout
    assert (tmp_path / "main" / "result" / "scripted" / RESULT_NAME).exists()


def test_plain_progress_lines_when_not_a_terminal(tmp_path: Path) -> None:
    args = [a if a != "none" else "auto" for a in scripted_args(tmp_path / "p", "--limit", "2")]
    result = invoke(args)
    assert result.exit_code == 0
    assert "sessions 2/2  tasks 8/8" in result.output
