"""Time scoring on a release-sized result file and the CLI's start-up.

Builds 256 sessions / 1,024 tasks by replicating the golden vectors' 64 result rows (renumbered ids)
with a matching dataset, then times: scoring in process (`score_file` + writing the files), the `score`
command in a subprocess, and `python -m wtb_local --help` / `score --help` in a subprocess.
Targets: scoring < 2 s, help < 1 s. Usage: python scripts/bench_scoring.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "fixtures" / "vectors" / "sessions"
COPIES = 4  # 64 sessions x 4 = the release's 256 sessions, 1,024 tasks


def build(folder: Path) -> tuple[Path, Path]:
    dataset = [
        json.loads(line) for line in (VECTORS / "dataset.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    results = [
        json.loads(line) for line in (VECTORS / "result.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    n = len(dataset)
    data_lines, result_lines = [], []
    for copy in range(COPIES):
        for i, (session, result) in enumerate(zip(dataset, results, strict=True)):
            new_id = f"wild_tool_bench_{copy * n + i}"
            data_lines.append(json.dumps({**session, "id": new_id}, ensure_ascii=False))
            result_lines.append(json.dumps({**result, "id": new_id}, ensure_ascii=False))
    dataset_path, result_path = folder / "dataset.jsonl", folder / "result.jsonl"
    dataset_path.write_text("\n".join(data_lines) + "\n", encoding="utf-8")
    result_path.write_text("\n".join(result_lines) + "\n", encoding="utf-8")
    return dataset_path, result_path


def timed(fn, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def show(label: str, times: list[float], target: float) -> None:
    best, median = min(times), statistics.median(times)
    verdict = "ok" if median < target else "OVER TARGET"
    print(f"{label:<42} median {median:6.3f} s  best {best:6.3f} s  (target < {target} s: {verdict})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from wtb_local.benchmark.dataset import load_dataset
    from wtb_local.benchmark.scoring import score_file, write_score_files

    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        dataset_path, result_path = build(folder)
        sessions = load_dataset(dataset_path)
        tasks = sum(len(s.english_tasks) for s in sessions)
        print(
            f"{len(sessions)} sessions, {tasks} tasks, result file {result_path.stat().st_size / 1e6:.1f} MB"
        )

        load_times = timed(lambda: load_dataset(dataset_path), args.repeat)
        show("load dataset (in process)", load_times, 2.0)

        def score_in_process() -> None:
            scored = score_file(result_path, sessions, "bench")
            write_score_files(folder / "out", "bench", scored.score_rows, scored.metric)

        show("score + write files (in process)", timed(score_in_process, args.repeat), 2.0)

        command = [
            sys.executable,
            "-m",
            "wtb_local",
            "score",
            str(result_path),
            "--dataset",
            str(dataset_path),
            "--out",
            str(folder / "cli"),
        ]
        show("`score` command (subprocess, end to end)", timed(lambda: run(command), args.repeat), 2.0)

    show(
        "python -m wtb_local --help",
        timed(lambda: run([sys.executable, "-m", "wtb_local", "--help"]), args.repeat),
        1.0,
    )
    show(
        "python -m wtb_local score --help",
        timed(lambda: run([sys.executable, "-m", "wtb_local", "score", "--help"]), args.repeat),
        1.0,
    )


def run(command: list[str]) -> None:
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)


if __name__ == "__main__":
    main()
