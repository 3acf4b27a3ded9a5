"""Runs the export tests read, each made here from data the exporters did not write: the oracle demo run on
the sample, a full-release run (a synthetic 256-session file standing in for the release), the recorded
reference-harness run of the golden vectors (tests/fixtures/vectors/sessions), and an oracle run whose
manifest is rewritten to an earlier wtb_local layout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "fixtures" / "vectors" / "sessions"
RECORDED_MODEL = "scripted"  # the model name the vectors' result file records


def wtb(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    environment.pop("WTB_MLFLOW_URI", None)
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, cwd=cwd,
                          env=environment,
                          capture_output=True, text=True, timeout=600)


def oracle_demo(tmp: Path, limit: int | None = None) -> Path:
    """The README's demo: `--model Qwen/Qwen3-8B --backend oracle --dataset sample --out runs/oracle-demo`."""
    out = tmp.resolve() / "runs" / "oracle-demo"
    args = ["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--out", str(out)]
    done = wtb(args + (["--limit", str(limit)] if limit else []), tmp)
    assert done.returncode == 0, done.stderr
    return out


def synthetic_release(cache: Path) -> Path:
    """A 256-session file with the release's shape (ids wild_tool_bench_0..255, four tasks each: the
    vectors' 64 sessions four times over) in the cache as the release file, with the verification stamp of
    the pinned release's git blob sha1: the real release is not available offline, and wtb_local reads a
    cached release only through that check (wtb_local/benchmark/dataset/verified.py)."""
    from wtb_local.benchmark.dataset.fetch import RELEASE_BLOB_SHA1, RELEASE_FILE_NAME
    from wtb_local.benchmark.dataset.verified import remember_sha1

    lines = (VECTORS / "dataset.jsonl").read_text(encoding="utf-8").splitlines()
    rows = []
    for n in range(256):
        session = json.loads(lines[n % len(lines)])
        session["id"] = f"wild_tool_bench_{n}"
        rows.append(json.dumps(session, ensure_ascii=False))
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / RELEASE_FILE_NAME
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    remember_sha1(path, RELEASE_BLOB_SHA1)
    return path


def _script_256(path: Path) -> Path:
    """The vectors' scripted replies for the 256-session file (session n answers as vector n % 64 does)."""
    rows = [json.loads(line) for line in (VECTORS / "script.jsonl").read_text(encoding="utf-8").splitlines()]
    out = []
    for copy in range(4):
        for row in rows:
            number = int(str(row["id"]).rsplit("_", 1)[1]) + 64 * copy
            out.append(json.dumps({**row, "id": f"wild_tool_bench_{number}"}, ensure_ascii=False))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def full_release_run(tmp: Path, extra: list[str] | None = None, name: str = "full-release") -> Path:
    """The vectors' scripted replies over the whole (synthetic) release, given as `--dataset release`: its
    figures are the reference implementation's for the vectors (metric.json), each session counted four
    times."""
    tmp = tmp.resolve()
    cache = tmp / "cache"
    synthetic_release(cache)
    out = tmp / "runs" / name
    script = _script_256(tmp / "script-256.jsonl")
    done = wtb(["--model", "Qwen/Qwen3-8B", "--backend", "scripted", "--script", str(script), "--dataset",
                "release", "--out", str(out), "--progress", "none", *(extra or [])], tmp,
               {"WTB_CACHE_DIR": str(cache)})
    assert done.returncode == 0, done.stderr
    return out


def recorded_run(tmp: Path) -> tuple[Path, Path]:
    """The reference harness's files of the golden vectors (result, score, metric; no manifest) in the
    harness's folder layout, and their dataset file."""
    run = tmp / "recorded"
    for sub, names in (("result", ("result.jsonl",)), ("score", ("score.jsonl", "metric.json"))):
        folder = run / sub / RECORDED_MODEL
        folder.mkdir(parents=True)
        for name in names:
            stem, suffix = name.split(".")
            shutil.copy(VECTORS / name, folder / f"Wild-Tool-Bench_{stem}.{suffix}")
    return run, VECTORS / "dataset.jsonl"


def older_manifest_run(tmp: Path) -> Path:
    """An oracle run whose manifest has an earlier wtb_local's layout (model, sampling and seed outside
    `config`, no `sampling_used`, the version as `wtb_local_version`; docs/files.md)."""
    out = tmp.resolve() / "runs" / "older"
    done = wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "2",
                "--out", str(out)], tmp)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    manifest.pop("sampling_used")
    manifest.pop("wtb_local")
    manifest.update(model={"id": "Qwen/Qwen3-8B"}, sampling=manifest["config"]["sampling"], seed=0,
                    wtb_local_version="0.1.0")
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def rescored_run(tmp: Path) -> Path:
    """The vectors' scripted replies (64 sessions) as a run of `Qwen/Qwen3-8B`, re-scored with the lenient
    checker (`rescore --checker lenient`): the run's own strict score set and a lenient one whose figures
    differ (AP 80.32 strict, 73.09 lenient)."""
    out = tmp.resolve() / "runs" / "rescored"
    done = wtb(["--model", "Qwen/Qwen3-8B", "--backend", "scripted", "--script", str(VECTORS / "script.jsonl"),
                "--dataset", str(VECTORS / "dataset.jsonl"), "--out", str(out), "--progress", "none"], tmp)
    assert done.returncode == 0, done.stderr
    done = wtb(["rescore", str(out), "--checker", "lenient"], tmp)
    assert done.returncode == 0, done.stderr
    return out


def metric_file(run: Path, score_set: str = "score") -> dict:
    """The metric file a score set's scorer wrote (`score`, or `score-lenient/score`)."""
    return json.loads((run / score_set / "Qwen_Qwen3-8B" / "Wild-Tool-Bench_metric.json").read_text())
