"""`--repeats K`: K seeds as one run, mean ± standard error in `run` and `report`, resumable per repeat
(docs/gpus-and-slurm.md, "Repeats with error bars")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from wtb_local.runner.repeats import error_bar_line, mean_and_stderr, mean_metric, repeat_seed

ROOT = Path(__file__).resolve().parents[2]


def _wtb(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "WTB_PROGRESS": "none"}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


def test_mean_and_standard_error() -> None:
    mean, stderr = mean_and_stderr([0.5, 0.75, 1.0])
    assert mean == 0.75 and stderr == 0.14433756729740643  # sample sd 0.25 over sqrt(3)
    assert mean_and_stderr([0.4]) == (0.4, 0.0)
    merged = mean_metric([{"model_name": "m", "total_info": {"task": {"accuracy": 0.5, "total_count": 4}}},
                          {"model_name": "m", "total_info": {"task": {"accuracy": 1.0, "total_count": 4}}}])
    assert merged == {"model_name": "m", "total_info": {"task": {"accuracy": 0.75, "total_count": 4.0}}}
    summary = {"repeats": 3, "task_accuracy": {"mean": 0.75, "stderr": 0.14433756729740643},
               "session_accuracy": {"mean": 0.5, "stderr": 0.0}}
    assert error_bar_line("M", summary) == ("M: task accuracy 75.00 ± 14.43, session accuracy 50.00 ± 0.00 "
                                            "(mean ± standard error over 3 repeats)")


def test_repeat_seeds_are_derived_with_sha256() -> None:
    assert repeat_seed(0, 0) == 0 and repeat_seed(7, 0) == 7
    # `printf '0/repeat/1' | sha256sum`: 7111ac7e..., 37eafb17... (first 31 bits)
    assert [repeat_seed(0, r) for r in (1, 2)] == [0x7111AC7E & 0x7FFFFFFF, 0x37EAFB17 & 0x7FFFFFFF]
    assert repeat_seed(1, 1) != repeat_seed(0, 1)


def test_repeats_run_report_and_resume(tmp_path: Path) -> None:
    args = ["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "2",
            "--temperature", "0.7", "--repeats", "3", "--out", str(tmp_path / "run")]
    done = _wtb(args, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == (
        "Qwen_Qwen3-8B: task accuracy 100.00 ± 0.00, session accuracy 100.00 ± 0.00 "
        "(mean ± standard error over 3 repeats)")
    summary = json.loads((tmp_path / "run" / "repeats.json").read_text())
    assert summary["seeds"] == [0, repeat_seed(0, 1), repeat_seed(0, 2)]
    for r, seed in enumerate(summary["seeds"]):
        manifest = json.loads((tmp_path / "run" / "repeats" / str(r) / "manifest.json").read_text())
        assert manifest["config"]["sampling"]["seed"] == seed and manifest["status"] == "complete"
    assert summary["task_accuracy"] == {"mean": 1.0, "stderr": 0.0, "values": [1.0, 1.0, 1.0]}

    shown = _wtb(["report", str(tmp_path / "run"), "--table", "6"], tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert ("Qwen_Qwen3-8B: task accuracy 100.00 ± 0.00, session accuracy 100.00 ± 0.00 (mean ± standard error "
            "over 3 repeats)") in shown.stdout.splitlines()

    # A lost repeat is run again; the others resume with every session kept.
    (tmp_path / "run" / "repeats" / "2" / "result" / "Qwen_Qwen3-8B" / "Wild-Tool-Bench_result.jsonl").unlink()
    again = _wtb(args, tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("2 finished session(s) skipped, 0 to run") == 2


def test_repeats_of_greedy_decoding_are_refused(tmp_path: Path) -> None:
    done = _wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--temperature", "0",
                 "--repeats", "2", "--out", str(tmp_path / "run")], tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == ("Error: --repeats 2: greedy decoding (--temperature 0) gives the same replies "
                                   "every time; repeats need sampled decoding")
    assert not (tmp_path / "run").exists()
