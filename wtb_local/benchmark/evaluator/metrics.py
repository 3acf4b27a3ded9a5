"""metric.json as the reference computes it (docs/evaluation.md §6): key order, buckets, 0.0 when empty."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wtb_local.contract.schema import Session

CORRECT = "correct"
MULTI_TOOL = "Multi-Tool"
FIRST_TURN = "First Turn"
SUBSEQUENT_TURN = "Subsequent Turn"
TASK_TYPES = (
    "Single-Tool",
    MULTI_TOOL,
    "Parallel Multi-Tool",
    "Sequential Multi-Tool",
    "Mixed Multi-Tool",
    "Clarify",
    "Chat",
)
TURN_SUBTYPES = (
    FIRST_TURN,
    SUBSEQUENT_TURN,
    "Coreferential Reference",
    "Partial Information",
    "Long-Range Dependency",
)
OPTIMAL_TYPES = ("Parallel Multi-Tool", "Mixed Multi-Tool")
PROGRESS_TYPES = ("Sequential Multi-Tool", "Mixed Multi-Tool")


class _Counter:
    """correct/total counts per bucket, buckets in a fixed order (the reference's)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.counts = {name: [0, 0] for name in names}

    def add(self, name: str, correct: bool) -> None:
        bucket = self.counts.setdefault(name, [0, 0])
        bucket[0] += int(correct)
        bucket[1] += 1

    def buckets(
        self, value: str = "accuracy", part: str = "correct_count", whole: str = "total_count"
    ) -> dict:
        return {
            name: {value: c / t if t > 0 else 0.0, part: c, whole: t} for name, (c, t) in self.counts.items()
        }


def compute_metrics(
    score_rows: Sequence[dict[str, Any]], sessions: Sequence[Session], model_name: str
) -> dict:
    """The metric dict of scored rows. `sessions` is the dataset, looked up by each row's id suffix
    (`wild_tool_bench_N` -> line N); the caller has checked that every id resolves.

    A row whose `results` is not a list (a crashed session) counts as a failed session with every one
    of its dataset tasks failed; tasks missing from a row also count as failed.
    """
    by_index = {session.index: session for session in sessions}
    total = _Counter(("task", "session"))
    types = _Counter(TASK_TYPES)
    layers = _Counter(("0", "1", "2", "3"))
    subtypes = _Counter(TURN_SUBTYPES)
    optimal = _Counter(("Total", *OPTIMAL_TYPES))
    progress = {name: [0, 0] for name in ("Total", *PROGRESS_TYPES)}

    for row in score_rows:
        session = by_index[session_index(row["id"])]
        results = row.get("results")
        tasks = results if isinstance(results, list) else []
        task_types = [t.value if hasattr(t, "value") else str(t) for t in session.english_task_types]
        turn_subtypes = [t.value if hasattr(t, "value") else str(t) for t in session.english_turn_subtypes]
        lengths = session.progress_lengths()
        session_correct = True
        for i, task_type in enumerate(task_types):
            task = tasks[i] if i < len(tasks) and isinstance(tasks[i], dict) else None
            correct = task is not None and task.get("label") == CORRECT
            session_correct = session_correct and correct
            total.add("task", correct)
            if MULTI_TOOL in task_type:
                types.add(MULTI_TOOL, correct)
            types.add(task_type, correct)
            layers.add(str(i), correct)
            if i == 0:
                subtypes.add(FIRST_TURN, correct)
            else:
                subtypes.add(SUBSEQUENT_TURN, correct)
                subtypes.add(turn_subtypes[i - 1], correct)
            if task_type in OPTIMAL_TYPES:
                is_optimal = bool(task is not None and task.get("is_optimal"))
                optimal.add("Total", is_optimal)
                optimal.add(task_type, is_optimal)
            if task_type in PROGRESS_TYPES:
                done = _step_count(task)
                for name in ("Total", task_type):
                    progress[name][0] += done
                    progress[name][1] += lengths[i]
        total.add("session", session_correct)

    return {
        "model_name": model_name,
        "total_info": total.buckets(),
        "task_type_info": types.buckets(),
        "layer_info": layers.buckets(),
        "turn_subtype_info": subtypes.buckets(),
        "optimal_info": optimal.buckets(),
        "progress_info": {
            name: {"rate": c / t if t > 0 else 0.0, "complete_step": c, "total_step": t}
            for name, (c, t) in progress.items()
        },
    }


def session_index(session_id: Any) -> int:
    """N of `wild_tool_bench_N`; ValueError when the id has no numeric suffix."""
    if not isinstance(session_id, str) or "_" not in session_id:
        raise ValueError(f"session id {session_id!r} is not of the form wild_tool_bench_<N>")
    suffix = session_id.rsplit("_", 1)[1]
    if not suffix.isdigit():
        raise ValueError(f"session id {session_id!r} is not of the form wild_tool_bench_<N>")
    return int(suffix)


def _step_count(task: dict[str, Any] | None) -> int:
    """`step_<k>` entries left in the scored log (the reference counts keys starting with "step")."""
    if task is None or not isinstance(task.get("inference_log"), dict):
        return 0
    return sum(1 for key in task["inference_log"] if key.startswith("step"))
