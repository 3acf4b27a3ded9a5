"""Whether two runs of the same tasks differ by more than their noise: the paired task-accuracy difference,
clustered by session (benchmark/scoring/uncertainty.py's `paired_difference`; docs/reports.md "Uncertainty")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wtb_local.benchmark.scoring.uncertainty import Estimate, beyond_noise, paired_difference


def paired_task_difference(first: Sequence[Any], second: Sequence[Any]) -> Estimate | None:
    """first - second task accuracy over the tasks both runs scored (TaskRecords: session_id, task_idx,
    correct); None when they share fewer than two sessions."""
    theirs = {(task.session_id, task.task_idx): task.correct for task in second}
    pairs = [(task.session_id, float(task.correct), float(theirs[(task.session_id, task.task_idx)]))
             for task in first if (task.session_id, task.task_idx) in theirs]
    if len({session for session, _, _ in pairs}) < 2:
        return None
    return paired_difference(pairs)


def paired_line(first: str, second: str, difference: Estimate) -> str:
    """`paired: A - B task accuracy +3.12 ± 2.01 (95% -0.82..+7.06; 64 tasks, 16 sessions): within the noise`."""
    verdict = "larger than its noise" if beyond_noise(difference) else "within its noise"
    return (f"paired: {first} - {second}: task accuracy {100 * difference.value:+.2f} ± {100 * difference.se:.2f} "
            f"(95% {100 * difference.low:+.2f}..{100 * difference.high:+.2f}; {int(difference.n)} tasks, "
            f"{difference.sessions} sessions, clustered by session): {verdict}")


def paired_lines(runs: Sequence[Any]) -> list[str]:
    """One line per pair of detailed runs (report.runs.Run) that scored common tasks, in their order."""
    detailed = [run for run in runs if run.tasks]
    lines = []
    for i, first in enumerate(detailed):
        for second in detailed[i + 1:]:
            difference = paired_task_difference(first.tasks, second.tasks)
            if difference is not None:
                lines.append(paired_line(first.label, second.label, difference))
    return lines


__all__ = ["paired_line", "paired_lines", "paired_task_difference"]
