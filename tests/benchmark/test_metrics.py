"""metric.json semantics (docs/evaluation.md §6) on small hand-made score rows."""

from __future__ import annotations

import json

from wtb_local.benchmark.evaluator.metrics import compute_metrics
from wtb_local.contract.schema import Session

PREPARE = {"action": {"name": "prepare_to_answer", "arguments": {"answer_type": "tool"}}, "observation": "ok"}
CALL = {"action": {"name": "get", "arguments": {"q": "a"}}, "observation": "x"}


def _session(
    index: int, types: list[str], subtypes: list[str], nodes: list[int], chinese: list[int] | None = None
) -> Session:
    answers = [[CALL] * (n - 1) + [PREPARE] for n in nodes]
    row = {
        "id": f"wild_tool_bench_{index}",
        "english_env_info": "2025-01-01",
        "english_tools": [],
        "english_tasks": ["t"] * len(types),
        "english_answer_list": answers,
        "english_task_types": types,
        "english_turn_subtypes": subtypes,
    }
    if chinese is not None:
        row["answer_list"] = [[PREPARE] * n for n in chinese]
    return Session.model_validate(row)


def _task(label: str, steps: int, optimal: bool = False) -> dict:
    log = {"task_idx": 0, "begin_of_current_task": {}}
    log.update({f"step_{k}": {} for k in range(steps)})
    return {"label": label, "action_name_label": label, "is_optimal": optimal, "inference_log": log}


SESSIONS = [
    _session(
        0,
        ["Single-Tool", "Parallel Multi-Tool", "Sequential Multi-Tool", "Chat"],
        ["Coreferential Reference", "Partial Information", "Long-Range Dependency"],
        [2, 3, 4, 1],
    ),
    _session(
        1,
        ["Clarify", "Mixed Multi-Tool", "Mixed Multi-Tool", "Single-Tool"],
        ["Partial Information", "Partial Information", "Coreferential Reference"],
        [2, 5, 4, 2],
        chinese=[2, 6, 4, 2],
    ),
]


def test_key_order_and_bucket_shapes() -> None:
    metric = compute_metrics([], SESSIONS, "m")
    assert list(metric) == [
        "model_name",
        "total_info",
        "task_type_info",
        "layer_info",
        "turn_subtype_info",
        "optimal_info",
        "progress_info",
    ]
    assert list(metric["task_type_info"]) == [
        "Single-Tool",
        "Multi-Tool",
        "Parallel Multi-Tool",
        "Sequential Multi-Tool",
        "Mixed Multi-Tool",
        "Clarify",
        "Chat",
    ]
    assert list(metric["layer_info"]) == ["0", "1", "2", "3"]
    assert list(metric["turn_subtype_info"]) == [
        "First Turn",
        "Subsequent Turn",
        "Coreferential Reference",
        "Partial Information",
        "Long-Range Dependency",
    ]
    assert list(metric["optimal_info"]) == ["Total", "Parallel Multi-Tool", "Mixed Multi-Tool"]
    assert list(metric["progress_info"]) == ["Total", "Sequential Multi-Tool", "Mixed Multi-Tool"]
    assert metric["total_info"]["task"] == {"accuracy": 0.0, "correct_count": 0, "total_count": 0}
    assert metric["progress_info"]["Total"] == {"rate": 0.0, "complete_step": 0, "total_step": 0}
    assert json.dumps(metric)  # plain JSON types only


def test_counts() -> None:
    rows = [
        {
            "id": "wild_tool_bench_0",
            "results": [
                _task("correct", 2),
                _task("correct", 3, optimal=True),
                _task("error", 2),
                _task("correct", 1),
            ],
        },
        {
            "id": "wild_tool_bench_1",
            "results": [
                _task("correct", 2),
                _task("correct", 5, optimal=True),
                _task("correct", 4),
                _task("correct", 2),
            ],
        },
    ]
    metric = compute_metrics(rows, SESSIONS, "m")
    assert metric["total_info"]["task"] == {"accuracy": 7 / 8, "correct_count": 7, "total_count": 8}
    assert metric["total_info"]["session"] == {"accuracy": 0.5, "correct_count": 1, "total_count": 2}
    types = metric["task_type_info"]
    assert types["Multi-Tool"] == {"accuracy": 0.75, "correct_count": 3, "total_count": 4}
    assert types["Sequential Multi-Tool"]["correct_count"] == 0
    assert types["Single-Tool"] == {"accuracy": 1.0, "correct_count": 2, "total_count": 2}
    assert metric["layer_info"]["2"] == {"accuracy": 0.5, "correct_count": 1, "total_count": 2}
    subtypes = metric["turn_subtype_info"]
    assert subtypes["First Turn"]["total_count"] == 2
    assert subtypes["Subsequent Turn"] == {"accuracy": 5 / 6, "correct_count": 5, "total_count": 6}
    assert subtypes["Partial Information"] == {"accuracy": 2 / 3, "correct_count": 2, "total_count": 3}
    # optimal over parallel + mixed tasks: correct when is_optimal, whatever the label
    assert metric["optimal_info"]["Total"] == {"accuracy": 2 / 3, "correct_count": 2, "total_count": 3}
    assert metric["optimal_info"]["Mixed Multi-Tool"]["total_count"] == 2
    # progress over sequential + mixed: step entries left / gold nodes (Chinese twin's lengths when present)
    progress = metric["progress_info"]
    assert progress["Sequential Multi-Tool"] == {"rate": 0.5, "complete_step": 2, "total_step": 4}
    assert progress["Mixed Multi-Tool"] == {"rate": 0.9, "complete_step": 9, "total_step": 10}
    assert progress["Total"] == {"rate": 11 / 14, "complete_step": 11, "total_step": 14}


def test_crashed_session_counts_all_tasks_failed() -> None:
    rows = [{"id": "wild_tool_bench_1", "results": "Error: prompt too long"}]
    metric = compute_metrics(rows, SESSIONS, "m")
    assert metric["total_info"]["task"] == {"accuracy": 0.0, "correct_count": 0, "total_count": 4}
    assert metric["total_info"]["session"] == {"accuracy": 0.0, "correct_count": 0, "total_count": 1}
    assert metric["optimal_info"]["Total"]["total_count"] == 2
    assert metric["progress_info"]["Mixed Multi-Tool"] == {"rate": 0.0, "complete_step": 0, "total_step": 10}
