"""What the record cases of the fault suite share (tests/faults/test_record_*.py; docs/reliability.md,
"Record faults"): real `python -m wtb_local run` subprocesses with the oracle backend on the sample made
16 times longer (128 sessions: about half a second of sessions on a free CPU, so a signal or a kill lands
mid-run), an uninterrupted reference run to compare against, and the checks every case ends with."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.run.conftest import read_jsonl, without_timing

ROOT = Path(__file__).resolve().parents[2]
MODEL_DIR = "Qwen_Qwen3-8B"
RESULT = Path("result") / MODEL_DIR / "Wild-Tool-Bench_result.jsonl"
SCORE = Path("score") / MODEL_DIR / "Wild-Tool-Bench_score.jsonl"
METRIC = Path("score") / MODEL_DIR / "Wild-Tool-Bench_metric.json"
COPIES = 16
SESSIONS = 8 * COPIES
TIMEOUT_S = 120  # no case may hang: every wait is bounded


def seeded(name: str) -> random.Random:
    """A generator seeded from sha256 of a fixed string: the same moments on every machine and rerun."""
    return random.Random(int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big"))


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", **extra}


def command(dataset: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "wtb_local", "run", "--model", "Qwen/Qwen3-8B", "--backend", "oracle",
            "--dataset", str(dataset), "--out", str(out), "--progress", "none", *extra]


def make_dataset(folder: Path) -> Path:
    from tests.helpers.workload import replicated_dataset
    from wtb_local.contract.resources import sample_dataset_path

    return replicated_dataset(sample_dataset_path(), COPIES, folder / "dataset.jsonl")


@dataclass(frozen=True)
class Reference:
    """An uninterrupted run of the same command: its files (result and score rows without their wall-clock
    fields, parsed once), and how long it took."""

    out: Path
    wall_s: float
    rows: dict[Path, list[Any]]


def _rows(path: Path) -> list[Any]:
    return [without_timing(row) for row in read_jsonl(path)]


def reference_run(dataset: Path, out: Path) -> Reference:
    started = time.monotonic()
    done = subprocess.run(command(dataset, out), env=env(), capture_output=True, text=True, timeout=TIMEOUT_S,
                          check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return Reference(out, time.monotonic() - started, {name: _rows(out / name) for name in (RESULT, SCORE)})


def run(dataset: Path, out: Path, *extra: str, **environ: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(dataset, out, *extra), env=env(**environ), capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False, cwd=ROOT)


def resuming(out: Path, kept: int) -> str:
    """The line a rerun prints when it keeps `kept` finished sessions."""
    return f"resuming {out}: {kept} finished session(s) skipped, {SESSIONS - kept} to run"


def manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def complete_rows(path: Path) -> list[dict[str, Any]]:
    """The whole session lines of a result file (a killed writer may leave a partial last line)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "result" in row:
            rows.append(row)
    return rows


def assert_same_results(out: Path, reference: Reference) -> None:
    """Result lines and score files identical to the uninterrupted run's (wall-clock fields aside), the run
    complete, and nothing left running or locked."""
    for name in (RESULT, SCORE):
        assert _rows(out / name) == reference.rows[name], name
    assert (out / METRIC).read_bytes() == (reference.out / METRIC).read_bytes()
    assert_closed(out, "complete")


def assert_closed(out: Path, status: str) -> None:
    """The manifest says `status` (never `running` after the process is gone) and the lock is released."""
    assert manifest(out)["status"] == status
    assert not (out / "run.lock").exists()
