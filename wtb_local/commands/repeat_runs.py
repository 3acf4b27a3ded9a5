"""`--repeats K`: K seeds of one sampled run, reported as mean ± standard error.

Repeat r is an ordinary run directory, `<run dir>/repeats/<r>/`, run with seed `repeat_seed(seed, r)`
(repeat 0 keeps the run seed, so `--repeats 1` is the plain run); each resumes on its own, so a stopped
repeats run loses only its unfinished sessions. One engine serves all K. `<run dir>/repeats.json` holds
the seeds, each repeat's task and session accuracy, their mean and standard error (sample standard
deviation over sqrt(K)), and the mean of every figure of the K metric files (`mean_metric`, what the
table row shows).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wtb_local.runner.errors import RunError
from wtb_local.runner.setup.options import RunOptions

SUMMARY_NAME = "repeats.json"


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

    return merge(metrics)


@dataclass
class RepeatsOutcome:
    run_dir: Path
    summary: dict[str, Any]
    outcomes: list[Any]


def check_repeats(prep: Any, repeats: int) -> None:
    """Repeats differ only where replies are sampled: refused, in one line, where they cannot differ."""
    if repeats < 2:
        return
    run, caps = prep.run, prep.backend_class.capabilities
    if not caps.samples:
        what = "replays fixed replies" if caps.replays else "does not sample"
        raise RunError(f"--repeats {repeats}: the {run.backend} backend {what}; every repeat would give the "
                       "same replies")
    if run.sampling.temperature == 0:
        raise RunError(f"--repeats {repeats}: greedy decoding (--temperature 0) gives the same replies every "
                       "time; repeats need sampled decoding")
    from wtb_local.runner.record.run_record import sampling_used  # deferred: start-up

    used = sampling_used(run)
    if used.get("do_sample") is False:
        raise RunError(f"--repeats {repeats}: greedy decoding ({used['source']}: do_sample false) gives the "
                       "same replies every time; pass --temperature above 0 for sampled decoding")


async def run_repeats_async(options: RunOptions, repeats: int, stderr: Any = None) -> RepeatsOutcome:
    from wtb_local.contract.lock_file import locked
    from wtb_local.runner.setup.prepare import prepare

    err = stderr or sys.stderr
    prep = prepare(options, None, err)
    check_repeats(prep, repeats)
    with locked(prep.paths.run_dir, err):  # one repeats run per folder; each repeat locks its own too
        return await _run_repeats(options, repeats, prep, err)


async def _run_repeats(options: RunOptions, repeats: int, prep: Any, err: Any) -> RepeatsOutcome:
    from wtb_local.runner.job import run_job_async

    run_dir = prep.paths.run_dir
    backend = prep.build_backend()
    await backend.start()
    outcomes = []
    try:
        for r in range(repeats):
            seed = repeat_seed(options.seed, r)
            one = options.model_copy(update={"out": str(run_dir / "repeats" / str(r)), "seed": seed,
                                             "model_name": prep.run.model_name})
            print(f"repeat {r + 1} of {repeats} (seed {seed})", file=err)
            outcomes.append(await run_job_async(one, backend=backend, renderer=prep.renderer, stderr=err))
    finally:
        await backend.close()
    summary = summarize(run_dir, [o.settings.seed for o in outcomes], [o.metric for o in outcomes])
    return RepeatsOutcome(run_dir, summary, outcomes)


def run_repeats(options: RunOptions, repeats: int, **kwargs: Any) -> RepeatsOutcome:
    from wtb_local.runner.loop.stopping import installed

    with installed():
        return asyncio.run(run_repeats_async(options, repeats, **kwargs))


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
