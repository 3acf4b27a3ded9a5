"""`run`, `score`, `report` and `--replay` agree: run directories everywhere, the run's own score folder,
the recorded dataset and model, one label per model (the metric file's model name), readable names and
real numbers in messages
(docs/getting-started.md). Real commands in a subprocess."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from wtb_local.contract.resources import sample_dataset_path
from wtb_local.run.setup.naming import default_model_name

ROOT = Path(__file__).resolve().parents[1]
RESULT = "Wild-Tool-Bench_result.jsonl"


def _wtb(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "WTB_PROGRESS": "none"}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


def _oracle_run(tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "run"
    done = _wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "2",
                 "--out", str(out), *extra], tmp_path)
    assert done.returncode == 0, done.stderr
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_score_takes_a_run_directory_and_writes_into_its_score_folder(tmp_path: Path) -> None:
    run = _oracle_run(tmp_path)
    metric = run / "score" / "Qwen_Qwen3-8B" / "Wild-Tool-Bench_metric.json"
    metric.unlink()
    done = _wtb(["score", str(run)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [f"score:  {run / 'score' / 'Qwen_Qwen3-8B' / 'Wild-Tool-Bench_score.jsonl'}",
                                            f"metric: {metric}"]
    assert "warning" not in done.stderr and "\nQwen_Qwen3-8B " in done.stdout  # the label `run` printed
    assert json.loads(metric.read_text())["total_info"]["task"]["total_count"] == 8
    assert stat.S_IMODE(metric.stat().st_mode) == 0o666 & ~_umask()  # not mkstemp's 0600
    assert not (tmp_path / "Wild-Tool-Bench_metric.json").exists()


def test_score_refuses_another_dataset_and_warns_without_a_manifest(tmp_path: Path) -> None:
    run = _oracle_run(tmp_path)
    other = tmp_path / "other.jsonl"
    other.write_text(sample_dataset_path().read_text(encoding="utf-8") + "\n")  # other bytes
    refused = _wtb(["score", str(run), "--dataset", str(other)], tmp_path)
    assert refused.returncode == 1 and refused.stderr.strip().splitlines()[-1].startswith(
        f"Error: {run / 'result' / 'Qwen_Qwen3-8B' / RESULT}: its run's manifest records dataset sha256 ")

    loose = tmp_path / "loose.jsonl"
    loose.write_text((run / "result" / "Qwen_Qwen3-8B" / RESULT).read_text(encoding="utf-8"))
    done = _wtb(["score", str(loose), "--dataset", "sample", "--out", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"warning: {loose} has no run manifest next to it: its dataset could not be checked (scored against " \
           "--dataset sample)" in done.stderr
    assert (tmp_path / "out" / "Wild-Tool-Bench_metric.json").is_file()


def test_replay_takes_the_recorded_model_and_report_uses_the_run_label(tmp_path: Path) -> None:
    run = _oracle_run(tmp_path)
    done = _wtb(["run", "--backend", "replay", "--replay", str(run), "--dataset", "sample",
                 "--out", str(tmp_path / "again")], tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "again" / "manifest.json").read_text())
    assert manifest["config"]["model"] == "Qwen/Qwen3-8B" and manifest["config"]["model_name"] == "Qwen/Qwen3-8B"
    assert (tmp_path / "again" / "result" / "Qwen_Qwen3-8B" / RESULT).is_file()

    first = _wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "2",
                  "--out", str(run)], tmp_path)  # resumes: nothing to run, the same table again
    shown = _wtb(["report", str(run), "--table", "6", "--no-paper"], tmp_path)
    assert shown.returncode == 0, shown.stderr

    def labels(text: str) -> list[str]:
        return [line.split()[0] for line in text.splitlines() if "100.00" in line]

    assert set(labels(shown.stdout)) == set(labels(first.stdout)) == {"Qwen_Qwen3-8B"}  # one label in run and report


def test_a_local_model_directory_gives_a_readable_name(tmp_path: Path) -> None:
    model = tmp_path / "models" / "my-tuned-qwen"
    model.mkdir(parents=True)
    done = _wtb(["--model", str(model), "--backend", "oracle", "--parser", "hermes", "--dataset", "sample",
                 "--limit", "1"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs" / "my-tuned-qwen" / "result" / "my-tuned-qwen" / RESULT).is_file()
    snapshot = tmp_path / "hub" / "models--Qwen--Qwen3-8B" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    assert default_model_name(str(snapshot)) == "Qwen/Qwen3-8B"
    assert default_model_name("Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"


def test_a_run_over_more_sessions_than_the_release_says_so(tmp_path: Path) -> None:
    from tests.run.test_signals import replicated_sample

    dataset = replicated_sample(33, tmp_path / "big.jsonl")  # 264 sessions
    done = _wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", str(dataset),
                 "--out", str(tmp_path / "big")], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == (
        f"note: 264 sessions were scored (dataset: {dataset}), not the release's 256; the paper's row is over "
        "the release.")
