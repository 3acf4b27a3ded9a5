"""Descriptive statistics of a dataset (what `data stats` prints).

Step counts come from the gold dependency graphs: a task's depth is its longest dependency chain (the
`min_length` of docs/evaluation.md §2), and its as-soon-as-possible schedule puts every node on the level
given by that chain; the tool calls on one level form one parallel step.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from wtb_local.benchmark.dataset.dag import levels
from wtb_local.contract.schema import (
    ASK_ACTION,
    MULTI_TOOL_TYPES,
    PREPARE_ACTION,
    PSEUDO_ACTIONS,
    Session,
    TaskType,
    TurnSubtype,
)

FIRST_TURN = "First Turn"


def dataset_stats(sessions: list[Session]) -> dict[str, Any]:
    """Counts over sessions and tasks; every mapping has a fixed key order (no dataset-dependent order)."""
    types: Counter[str] = Counter()
    subtypes: Counter[str] = Counter()
    positions: Counter[int] = Counter()
    nodes = tool_nodes = ask_nodes = prepare_nodes = 0
    tool_steps = depth_total = max_depth = parallel_tasks = max_width = 0
    defined: set[str] = set()
    called: set[str] = set()
    for session in sessions:
        defined.update(str(t.get("function", {}).get("name")) for t in session.english_tools)
        for i, task_nodes in enumerate(session.english_answer_list):
            types[session.english_task_types[i].value] += 1
            subtypes[FIRST_TURN if i == 0 else session.english_turn_subtypes[i - 1].value] += 1
            positions[i + 1] += 1
            names = [node.action.name for node in task_nodes]
            nodes += len(names)
            ask_nodes += names.count(ASK_ACTION)
            prepare_nodes += names.count(PREPARE_ACTION)
            called.update(n for n in names if n not in PSEUDO_ACTIONS)
            task_levels = levels([node.dependency_list for node in task_nodes])
            depth = max(task_levels) + 1
            depth_total += depth
            max_depth = max(max_depth, depth)
            width = Counter(lv for lv, n in zip(task_levels, names, strict=True) if n not in PSEUDO_ACTIONS)
            tool_nodes += sum(width.values())
            tool_steps += len(width)
            widest = max(width.values(), default=0)
            parallel_tasks += widest >= 2
            max_width = max(max_width, widest)
    n_tasks = sum(types.values())
    by_type = {t.value: types[t.value] for t in TaskType}
    by_type["Multi-Tool"] = sum(types[t.value] for t in MULTI_TOOL_TYPES)
    return {
        "sessions": len(sessions),
        "tasks": n_tasks,
        "task_types": by_type,
        "turn_subtypes": {
            FIRST_TURN: subtypes[FIRST_TURN],
            **{t.value: subtypes[t.value] for t in TurnSubtype},
        },
        "task_positions": {str(p): positions[p] for p in sorted(positions)},
        "gold_nodes": nodes,
        "tool_call_nodes": tool_nodes,
        "ask_nodes": ask_nodes,
        "prepare_nodes": prepare_nodes,
        "tool_call_steps": tool_steps,
        "mean_tool_call_steps_per_task": round(tool_steps / n_tasks, 4) if n_tasks else 0.0,
        "mean_depth": round(depth_total / n_tasks, 4) if n_tasks else 0.0,
        "max_depth": max_depth,
        "tasks_with_parallel_steps": parallel_tasks,
        "max_parallel_width": max_width,
        "distinct_tools_defined": len(defined),
        "distinct_tools_called": len(called),
    }


_LABELS = {
    "sessions": "sessions",
    "tasks": "tasks",
    "gold_nodes": "gold nodes",
    "tool_call_nodes": "tool-call nodes",
    "ask_nodes": "ask nodes",
    "prepare_nodes": "prepare nodes",
    "tool_call_steps": "tool-call steps (as-soon-as-possible)",
    "mean_tool_call_steps_per_task": "tool-call steps per task (mean)",
    "mean_depth": "dependency depth (mean longest chain)",
    "max_depth": "dependency depth (max)",
    "tasks_with_parallel_steps": "tasks with parallel steps",
    "max_parallel_width": "max parallel width",
    "distinct_tools_defined": "distinct tools defined",
    "distinct_tools_called": "distinct tools called",
}
_GROUPS = {
    "task_types": "tasks by type",
    "turn_subtypes": "tasks by turn subtype",
    "task_positions": "tasks by position (task order)",
}


def format_stats(stats: dict[str, Any], title: str = "") -> str:
    """Plain aligned text, one figure a line."""
    lines = [title] if title else []
    width = max(len(label) for label in _LABELS.values()) + 2
    for key in ("sessions", "tasks"):
        lines.append(f"{_LABELS[key]:<{width}}{stats[key]}")
    for key, heading in _GROUPS.items():
        lines.append(f"{heading}:")
        lines.extend(f"  {name:<{width - 2}}{count}" for name, count in stats[key].items())
    for key, label in _LABELS.items():
        if key not in ("sessions", "tasks"):
            lines.append(f"{label:<{width}}{stats[key]}")
    return "\n".join(lines)
