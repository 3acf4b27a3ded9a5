"""`--repeats K`: K seeds of one sampled run, reported as mean ± standard error.

Repeat r is an ordinary run directory, `<run dir>/repeats/<r>/`, run with seed `repeat_seed(seed, r)`
(repeat 0 keeps the run seed, so `--repeats 1` is the plain run); each resumes on its own, so a stopped
repeats run loses only its unfinished sessions. One engine serves all K. `<run dir>/repeats.json` holds
the seeds, each repeat's task and session accuracy, their mean and standard error (sample standard
deviation over sqrt(K)), and the mean of every figure of the K metric files (`mean_metric`, what the
table row shows).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

from wtb_local.contract.paths import REPEATS_JSON as SUMMARY_NAME


def repeat_seed(seed: int, repeat: int) -> int:
    """The run seed of repeat `repeat`: the run seed itself for 0, else 31 bits of sha256."""
    if repeat == 0:
        return seed
    digest = hashlib.sha256(f"{seed}/repeat/{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def mean_and_stderr(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


def mean_metric(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """Every number averaged over the metric files (same keys in each); other values from the first."""
    def merge(values: list[Any]) -> Any:
        first = values[0]
        if isinstance(first, dict):
            return {key: merge([v[key] for v in values if isinstance(v, dict) and key in v]) for key in first}
        if isinstance(first, (int, float)) and not isinstance(first, bool):
            return sum(values) / len(values)
        return first

    return {key: merge([m[key] for m in metrics if key in m]) for key in metrics[0]}  # merge's dict case, typed


def summarize(run_dir: Path, seeds: list[int], metrics: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {"repeats": len(metrics), "seeds": seeds,
                               "runs": [f"repeats/{r}" for r in range(len(metrics))]}
    for level in ("task", "session"):
        values = [float(m["total_info"][level]["accuracy"]) for m in metrics]
        mean, stderr = mean_and_stderr(values)
        summary[f"{level}_accuracy"] = {"mean": mean, "stderr": stderr, "values": values}
    summary["mean_metric"] = mean_metric(metrics)
    path = run_dir / SUMMARY_NAME
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return summary


def read_summary(path: str | Path) -> dict[str, Any] | None:
    """The repeats summary of a run directory, or None for a single run (or any other path)."""
    file = Path(path) / SUMMARY_NAME
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "mean_metric" in data else None


def error_bar_line(label: str, summary: dict[str, Any]) -> str:
    """`M: task accuracy 45.31 ± 1.20, session accuracy 12.50 ± 0.80 (mean ± standard error over 3 repeats)`."""
    task, session = summary["task_accuracy"], summary["session_accuracy"]
    return (f"{label}: task accuracy {100 * task['mean']:.2f} ± {100 * task['stderr']:.2f}, session accuracy "
            f"{100 * session['mean']:.2f} ± {100 * session['stderr']:.2f} "
            f"(mean ± standard error over {summary['repeats']} repeats)")
