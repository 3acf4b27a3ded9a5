"""The explanation of runs of the same tasks, as one JSON-ready dict: the runs, the factors that differ and
those that are equal, the verdict flips of every pair with their first point of divergence and a paired
test, the waterfall from the first run to each other one, and the seed spread of `--repeats` runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from wtb_local.analysis.explain.decompose import counts, decompose, reparse, session_sets
from wtb_local.analysis.explain.divergence import compare_pair
from wtb_local.analysis.explain.factors import FACTORS
from wtb_local.analysis.explain.runs import ExplainRun, TaskKey, common_tasks
from wtb_local.analysis.explain.stats import ALPHA, TEST_NAME, flip_rate, mcnemar_exact, pairwise_flip_rate
from wtb_local.benchmark.scoring.uncertainty import beyond_noise, binomial, cluster_ratio, paired_difference


def _accuracy(run: ExplainRun, keys: list[TaskKey], sessions: dict[str, list[TaskKey]]) -> tuple[float, float]:
    tasks, whole = counts(run.verdicts, keys, sessions)
    return (100.0 * tasks / len(keys) if keys else 0.0, 100.0 * whole / len(sessions) if sessions else 0.0)


def _errors(run: ExplainRun, keys: list[TaskKey], sessions: dict[str, list[TaskKey]]) -> dict[str, Any]:
    """The run's task accuracy error (clustered by session) and session accuracy error (binomial), in %,
    from benchmark/scoring/uncertainty.py as every command takes them."""
    by_session: dict[str, list[float]] = {}
    for key in keys:
        part = by_session.setdefault(key[0], [0.0, 0.0])
        part[0] += float(run.verdicts.get(key, False))
        part[1] += 1
    task = cluster_ratio((y, m) for y, m in by_session.values())
    whole = binomial(counts(run.verdicts, keys, sessions)[1], len(sessions))
    return {"task_se": 100 * task.se, "task_low": 100 * task.low, "task_high": 100 * task.high,
            "session_se": 100 * whole.se, "session_low": 100 * whole.low, "session_high": 100 * whole.high}


def _session_verdicts(run: ExplainRun, sessions: dict[str, list[TaskKey]]) -> dict[str, bool]:
    return {sid: all(run.verdicts[key] for key in tasks) for sid, tasks in sessions.items()}


def _pair(a: ExplainRun, b: ExplainRun, keys: list[TaskKey], sessions: dict[str, list[TaskKey]],
          seed_rate: float | None) -> dict[str, Any]:
    compared = compare_pair(a, b, keys)
    (ta, sa), (tb, sb) = _accuracy(a, keys, sessions), _accuracy(b, keys, sessions)
    va, vb = _session_verdicts(a, sessions), _session_verdicts(b, sessions)
    only_a_sessions = sum(1 for sid in sessions if va[sid] and not vb[sid])
    only_b_sessions = sum(1 for sid in sessions if vb[sid] and not va[sid])
    p_tasks = mcnemar_exact(compared["only_a"], compared["only_b"])
    same_group = a.group is not None and a.group == b.group
    # the task gap with its paired error, clustered by session (docs/reports.md "Uncertainty")
    gap = paired_difference((key[0], float(b.verdicts.get(key, False)), float(a.verdicts.get(key, False)))
                            for key in keys)
    return {"a": a.label, "b": b.label, "seed_pair": same_group,
            "task_gap": tb - ta, "session_gap": sb - sa, "flips": len(compared["flipped"]),
            "only_a": compared["only_a"], "only_b": compared["only_b"],
            "flip_rate": len(compared["flipped"]) / len(keys) if keys else 0.0,
            "seed_flip_rate": seed_rate,
            "p_tasks": p_tasks, "p_sessions": mcnemar_exact(only_a_sessions, only_b_sessions),
            "beyond_noise": p_tasks < ALPHA,
            "task_gap_se": 100 * gap.se, "task_gap_low": 100 * gap.low, "task_gap_high": 100 * gap.high,
            "beyond_noise_clustered": beyond_noise(gap),
            "stages": compared["stages"], "flipped": compared["flipped"]}


def _seed_groups(runs: Sequence[ExplainRun], keys: list[TaskKey],
                 sessions: dict[str, list[TaskKey]]) -> list[dict[str, Any]]:
    from wtb_local.analysis.commands.repeat_runs import mean_and_stderr  # deferred: start-up

    groups: dict[str, list[ExplainRun]] = {}
    for run in runs:
        if run.group is not None:
            groups.setdefault(run.group, []).append(run)
    found = []
    for group, members in groups.items():
        if len(members) < 2:
            continue
        task_values = [_accuracy(run, keys, sessions)[0] for run in members]
        session_values = [_accuracy(run, keys, sessions)[1] for run in members]
        task_mean, task_stderr = mean_and_stderr(task_values)
        session_mean, session_stderr = mean_and_stderr(session_values)
        verdicts = [[run.verdicts[key] for key in keys] for run in members]
        found.append({"group": group, "runs": [run.label for run in members],
                      "seeds": [run.factors["seed"] for run in members],
                      "task_accuracy": {"mean": task_mean, "stderr": task_stderr, "values": task_values},
                      "session_accuracy": {"mean": session_mean, "stderr": session_stderr,
                                           "values": session_values},
                      "flip_rate": flip_rate(verdicts), "pairwise_flip_rate": pairwise_flip_rate(verdicts)})
    return found


def explain_runs(runs: Sequence[ExplainRun], replay: Callable[..., Any]) -> dict[str, Any]:
    """The whole explanation. The first run is the baseline of the waterfalls; a `--repeats` run's seeds
    are compared with each other for the noise, not decomposed. `replay`: runs a replay of a recorded
    run through another parser (`runner.job.replay_run`, which `explain` passes)."""
    runs = list(runs)
    keys, notes = common_tasks(runs)
    sessions = session_sets(runs, keys)
    for run in runs:
        notes += [f"{run.label}: {note}" for note in run.notes]
    seeds = _seed_groups(runs, keys, sessions)
    seed_rate = (sum(group["pairwise_flip_rate"] for group in seeds) / len(seeds)) if seeds else None
    factors = []
    for item in FACTORS:
        values = {run.label: run.factors[item.name] for run in runs}
        factors.append({"name": item.name, "stage": item.stage, "source": item.source,
                        "differ": len(set(values.values())) > 1, "values": values})
    pairs = [_pair(a, b, keys, sessions, seed_rate) for i, a in enumerate(runs) for b in runs[i + 1:]]
    base = runs[0]
    others = [run for run in runs[1:] if base.group is None or run.group != base.group]
    decompositions = [decompose(base, run, keys, partial(reparse, replay=replay)) for run in others]
    summary = []
    for run in runs:
        task, session = _accuracy(run, keys, sessions)
        summary.append({"label": run.label, "path": str(run.path), "group": run.group, "seed": run.factors["seed"],
                        "task_accuracy": task, "session_accuracy": session, **_errors(run, keys, sessions)})
    return {"runs": summary, "tasks": len(keys), "sessions": len(sessions), "notes": notes,
            "test": TEST_NAME, "factors": factors, "pairs": pairs, "decompositions": decompositions,
            "seeds": seeds}
