"""Task verdicts and metrics as the paper harness computes them (paper-harness.md §3.1, §3.4)."""

from __future__ import annotations

import pytest

from wtb_local.benchmark.dataset import read_dataset
from wtb_local.benchmark.protocols.harness_scoring import (
    answer_structure,
    harness_metrics,
    progress_calls,
    score_task,
)
from wtb_local.contract.resources import sample_dataset_path

TOOL = {"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"x": {"type": "string", "description": "x"}}, "required": ["x"]}}}


def _node(idx: int, name: str = "f", deps: tuple[int, ...] = (), x: str = "a") -> dict:
    return {"idx": idx, "action": {"name": name, "arguments": {"x": x} if name == "f" else {}},
            "dependency_list": list(deps), "observation": "o"}


PREPARE = "prepare_to_answer"


@pytest.mark.parametrize(("nodes", "structure"), [
    ([_node(0), _node(1, PREPARE, (0,))], None),  # one call: no multi-tool bucket
    ([_node(0), _node(1), _node(2, PREPARE, (0, 1))], "combine"),
    ([_node(0), _node(1, deps=(0,)), _node(2, PREPARE, (1,))], "serial"),
    ([_node(0), _node(1), _node(2, deps=(0, 1)), _node(3, PREPARE, (2,))], "cs"),
    ([_node(0, "ask_user_for_required_parameters"), _node(1, deps=(0,)), _node(2, PREPARE, (1,))], None),
])
def test_multi_tool_bucket_comes_from_the_dag(nodes: list, structure: str | None) -> None:
    """§3.4 `analysis_answer_type`: pseudo-actions skipped, a node depending on the current group opens a new one."""
    assert answer_structure(nodes) == structure


def _step(*names: str) -> dict:
    calls = [{"id": str(i), "function": {"name": n, "arguments": '{"x": "a"}'}} for i, n in enumerate(names)]
    return {"content": None if calls else "text", "tool_calls": calls or None}


def test_ap_counts_calls_not_steps() -> None:
    """§3.4 `calculate_predict_result_steps`: correct -> every node; otherwise the calls of all steps but the
    last (a text step counts 1), plus the last step's calls when argument pairs failed."""
    assert progress_calls("correct", [_step("f", "f"), _step()], 4, []) == 4
    assert progress_calls("error", [_step("f", "f"), _step("g")], 4, []) == 2
    assert progress_calls("error", [_step(), _step("f", "f"), _step("g")], 5, []) == 3
    assert progress_calls("error", [_step("f", "f"), _step()], 3, [{"step": 0}]) == 3


def _task(label: str, steps: list[dict], optimal: bool = True) -> dict:
    log = {f"step_{i}": {"inference_output": s} for i, s in enumerate(steps)}
    return {"action_name_label": label, "is_optimal": optimal, "inference_log": log}


def test_wrong_arguments_fail_the_task_but_not_the_action() -> None:
    nodes = [_node(0), _node(1, PREPARE, (0,))]
    steps = [{"content": None, "tool_calls": [{"id": "0", "function": {"name": "f", "arguments": '{"x": "zzz"}'}}]},
             {"content": "done", "tool_calls": None}]
    entry = score_task(_task("correct", steps), nodes, [TOOL])
    assert (entry["label"], entry["action_name_label"], entry["action_arguments_label"]) == ("error", "correct", "error")
    assert entry["progress"] == [2, 2]  # 1 call of the first step + the last (text) step, as the harness counts


def test_what_the_checker_raises_on_flips_both_labels() -> None:
    """§3.1 step 3: any exception in the argument check makes the task an action error."""
    nodes = [_node(0), _node(1, PREPARE, (0,))]
    steps = [{"content": None, "tool_calls": [{"id": "0", "function": {"name": "f", "arguments": "{not json"}}]},
             {"content": "done", "tool_calls": None}]
    entry = score_task(_task("correct", steps), nodes, [TOOL])
    assert (entry["label"], entry["action_name_label"], entry["is_optimal"]) == ("error", "error", False)
    assert entry["check_error"].startswith("LenientCheckError")


def test_metrics_use_structure_buckets_and_harness_ap_op() -> None:
    """On the sample: session 0's task 0 is parallel (combine), task 1 sequential (serial). AP is over
    serial/cs tasks with node counts as denominators; OP over combine/cs tasks, correct and optimal."""
    sessions, _ = read_dataset(sample_dataset_path())
    session = sessions[0]
    answers = [[n.model_dump(mode="json") for n in nodes] for nodes in session.english_answer_list]
    assert [answer_structure(a) for a in answers] == ["combine", "serial", None, None]
    rows = [{"id": session.id, "results": [
        {"label": "correct", "is_optimal": False, "structure": "combine", "progress": [3, 3]},
        {"label": "error", "is_optimal": False, "structure": "serial", "progress": [1, 3]},
        {"label": "correct", "structure": None, "progress": [1, 1]},
        {"label": "correct", "structure": None, "progress": [2, 2]},
    ]}]
    metric = harness_metrics(rows, sessions, "m")
    assert metric["total_info"]["task"] == {"accuracy": 0.75, "correct_count": 3, "total_count": 4}
    assert metric["total_info"]["session"]["correct_count"] == 0
    assert metric["task_type_info"]["Parallel Multi-Tool"]["correct_count"] == 1
    assert metric["task_type_info"]["Sequential Multi-Tool"]["total_count"] == 1
    assert metric["progress_info"]["Total"] == {"rate": 1 / 3, "complete_step": 1, "total_step": 3}
    assert metric["optimal_info"]["Total"] == {"accuracy": 0.0, "correct_count": 0, "total_count": 1}
    assert metric["protocol"]["checker"] == "lenient"


# --- §3.2 one failure category per failed task ----------------------------------------------------------------

from wtb_local.benchmark.protocols.harness_scoring import error_type

ASK = "ask_user_for_required_parameters"


def _gold(*names: str) -> list[dict]:
    return [{"action": {"name": n, "arguments": {}}} for n in names]


def _text() -> dict:
    return {"content": "text", "tool_calls": None}


def _calls(*names: str) -> dict:
    return {"content": None, "tool_calls": [{"id": str(i), "function": {"name": n, "arguments": "{}"}}
                                            for i, n in enumerate(names)]}


@pytest.mark.parametrize(("case", "steps", "gold", "label"), [
    ("one step and no valid call", [_text()], _gold("f", PREPARE), "reject tool calling"),
    ("a chat task got a call", [_calls("f")], _gold(PREPARE), "call function without reject"),
    ("a name not offered", [_calls("nope")], _gold("f", PREPARE), "function name hallucination"),
    ("filter_by_prompt is a refusal", [_calls("filter_by_prompt")], _gold("f", PREPARE), "reject tool calling"),
    ("never paused to ask", [_calls("f")], _gold(ASK, "f", PREPARE), "missing information in tool calling"),
    ("two text turns on a clarify task", [_text(), _text()], _gold(ASK, "f", PREPARE), "redundant tool calling"),
    ("premature text mid-sequence", [_calls("f"), _text()], _gold("f", "g", PREPARE), "call the wrong function"),
    ("more calls than gold nodes", [_calls("f", "f")], _gold("f", PREPARE), "redundant tool calling"),
    ("gold tools only, wrong grouping", [_calls("g")], _gold("f", "g", PREPARE), "early stop"),
])
def test_action_error_categories(case: str, steps: list, gold: list, label: str) -> None:
    assert error_type("error", steps, gold, {"f", "g"}, []) == label


def test_parameter_error_category_by_earliest_step_and_precedence() -> None:
    errors = [{"idx": 1, "error_type": ["param value error"]},
              {"idx": 0, "error_type": ["type error", "param hallucination"]}]
    assert error_type("correct", [], _gold("f", PREPARE), {"f"}, errors) == "param hallucination"
    assert error_type("correct", [], _gold("f", PREPARE), {"f"}, [{"idx": 0, "error_type": ["miss required params",
                                                                                            "type error"]}]) == "miss required params"
