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
