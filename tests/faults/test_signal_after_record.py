"""A signal after the run's record closed `complete` (docs/reliability.md, "Signals"): nothing is left to
stop or lose, so `python -m wtb_local run` ends with the record's exit code 0 and one line saying where the
run is, whether the signal comes as the record closes or as the process ends after its last output (where
the interpreter's shutdown used to end it by the signal, exit -2, with no line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOOK = Path(__file__).resolve().parent / "late_signal"


@pytest.mark.parametrize(("when", "name"), [("closed", "SIGINT"), ("closed", "SIGTERM"), ("exit", "SIGINT"),
                                            ("exit", "SIGTERM")])
def test_a_signal_after_the_record_closed_ends_with_exit_0_and_one_line(tmp_path: Path, when: str,
                                                                        name: str) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HOOK), str(ROOT)]), "PYTHONUNBUFFERED": "1",
           "HF_HUB_OFFLINE": "1", "WTB_FAULT_LATE_SIGNAL": when, "WTB_FAULT_LATE_SIGNAL_NAME": name}
    done = subprocess.run([sys.executable, "-m", "wtb_local", "--model", "Qwen/Qwen3-8B", "--backend", "oracle",
                           "--dataset", "sample", "--out", str(out), "--progress", "none"],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"{name} after the run ended: it is recorded complete in {out}; `python -m wtb_local report` on that "
        "folder prints its tables")
    assert "Traceback" not in done.stderr
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["status"] == "complete"
    assert not (out / "run.lock").exists()
    if when == "exit":  # everything was printed before the signal came
        assert "Table 6" in done.stdout


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_between_two_repeats_stops_before_the_next_and_the_rerun_runs_the_rest(
        qwen_tiny_dir: Path, tmp_path: Path, name: str) -> None:
    """`run --repeats 3`: the signal comes as the first repeat's record closes complete. That repeat is done,
    the others are not run: exit 130 and one line saying so (it used to be a note after all three had run,
    exit 0); the rerun skips the first repeat's sessions and runs the other two."""
    from tests.run.fake_openai import fake_openai_server

    out = tmp_path / "run"
    with fake_openai_server(str(qwen_tiny_dir), vary_by_seed=True) as server:  # repeats need a sampling backend
        args = [sys.executable, "-m", "wtb_local", "--model", str(qwen_tiny_dir), "--backend", "openai",
                "--base-url", server.base_url, "--dataset", "sample", "--temperature", "0.7", "--repeats", "3",
                "--out", str(out), "--progress", "none"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HOOK), str(ROOT)]), "PYTHONUNBUFFERED": "1",
               "HF_HUB_OFFLINE": "1", "WTB_FAULT_LATE_SIGNAL": "closed", "WTB_FAULT_LATE_SIGNAL_NAME": name}
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, check=False)
        assert done.returncode == 130, done.stderr
        assert "Traceback" not in done.stderr
        assert done.stderr.strip().splitlines()[-1] == (
            f"interrupted by {name} before repeat 2 of 3: 1 repeat(s) recorded in {out / 'repeats'}; rerun the "
            "same command to run the rest")
        assert json.loads((out / "repeats" / "0" / "manifest.json").read_text())["status"] == "complete"
        assert not (out / "repeats" / "1").exists() and not (out / "repeats.json").exists()
        assert not (out / "run.lock").exists()

        plain = {key: value for key, value in env.items() if not key.startswith("WTB_FAULT_")}
        again = subprocess.run(args, capture_output=True, text=True, env=plain, timeout=300, check=False)
    assert again.returncode == 0, again.stderr
    assert f"resuming {out / 'repeats' / '0'}: 8 finished session(s) skipped, 0 to run" in again.stderr
    assert [json.loads((out / "repeats" / r / "manifest.json").read_text())["status"] for r in "012"] == \
        ["complete"] * 3
