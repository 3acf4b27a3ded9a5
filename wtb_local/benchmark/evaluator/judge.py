"""Argument scoring of result rows into score rows (docs/evaluation.md §5, §7). Pure: no I/O.

The walk over a task's steps keeps the reference's quirks because they decide verdicts and the progress
rate: the step after the first failing step is deleted from the log and the task's `action_name_label`
is rewritten to `correct`; `action_arguments_label` is written only for tasks whose name label is then
`correct`; `label` comes first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from wtb_local.benchmark.evaluator.checker import CORRECT, check_arguments
from wtb_local.contract.schema import PSEUDO_ACTIONS

ERROR = "error"
EMPTY_CANDIDATE_KEY = "candidate_0_answer_function_list"


def score_session(result_row: Mapping[str, object]) -> dict[str, Any]:
    """One result-file line -> one score-file line `{"id", "results"}`. The input is not modified.

    A session whose `result` is an error string (the reference's record of a crashed session) keeps it
    as `results`; the metrics count each of its tasks as failed (docs/evaluation.md §7).
    """
    result = result_row.get("result")
    if not isinstance(result, list):
        return {"id": result_row.get("id"), "results": result}
    return {"id": result_row.get("id"), "results": [score_task(task) for task in result]}


def score_task(task: dict[str, Any]) -> dict[str, Any]:
    """Score one task's result entry; returns a new entry with `label` first (docs/evaluation.md §5). The
    input is not
    modified: what the walk changes is copied, the rest (messages, tools) is shared."""
    scored = dict(task)
    if isinstance(scored.get("inference_log"), dict):
        scored["inference_log"] = dict(scored["inference_log"])
    arguments_label = _walk_steps(scored)
    name_label = scored.get("action_name_label")
    if name_label == CORRECT:
        scored = _insert_after_first(scored, "action_arguments_label", arguments_label)
        if arguments_label == ERROR and scored.get("is_optimal") is True:
            scored["is_optimal"] = False
    label = CORRECT if name_label == CORRECT and arguments_label == CORRECT else ERROR
    return {"label": label, **scored}


def _walk_steps(task: dict[str, Any]) -> str:
    log = task.get("inference_log")
    if not isinstance(log, dict):
        return CORRECT
    arguments_label = CORRECT
    for key in [k for k in log if k.startswith("step_")]:
        if arguments_label == ERROR:
            # Reference quirk: the step after a failing one is dropped and the task counts as reaching
            # the end by name.
            task["action_name_label"] = CORRECT
            del log[key]
            break
        if not isinstance(log[key], dict):
            break
        step = log[key] = _copied(log[key], "inference_output", "inference_answer")
        if "inference_answer" not in step:
            # Steps with nothing to compare get an empty candidate so the reference scorer can read
            # the file too (docs/evaluation.md §7).
            step["inference_answer"] = {EMPTY_CANDIDATE_KEY: {"action": []}}
        output = step.get("inference_output")
        if not isinstance(output, dict) or output.get("current_action_name_label") != CORRECT:
            break
        if _score_step(step, output) == ERROR:
            arguments_label = ERROR
    return arguments_label


def _score_step(step: dict[str, Any], output: dict[str, Any]) -> str | None:
    """Check one accepted step's calls against its candidate; `None` for pseudo-action steps."""
    answer = step.get("inference_answer")
    if not isinstance(answer, dict) or not isinstance(answer.get(EMPTY_CANDIDATE_KEY), dict):
        return None  # no candidate: no action to check
    candidate = answer[EMPTY_CANDIDATE_KEY] = dict(answer[EMPTY_CANDIDATE_KEY])
    gold = candidate.get("action")
    if not isinstance(gold, list) or not gold:
        return None
    if (
        not isinstance(gold[0], dict)
        or not isinstance(gold[0].get("name"), str)
        or gold[0]["name"] in PSEUDO_ACTIONS
    ):
        return None

    tools = (
        step.get("inference_input", {}).get("tools", [])
        if isinstance(step.get("inference_input"), dict)
        else []
    )
    calls = [_normalized_call(call) for call in output.get("tool_calls") or []]
    calls.sort(key=lambda call: (call["function"]["name"], call["function"]["arguments"]))
    output["tool_calls"] = calls
    gold_actions = [_normalized_gold(action) for action in gold]
    gold_actions.sort(key=lambda action: (action["name"], action["arguments"]))
    candidate["action"] = gold_actions

    results = [
        check_arguments(tools, call["function"]["name"], call["function"]["arguments"], action["arguments"])
        for call, action in zip(calls, gold_actions, strict=False)
    ]
    if len(calls) != len(gold_actions):
        # Only a hand-edited file gets here (the loop accepts a step only when the names match).
        results.append(f"error: {len(calls)} tool calls for {len(gold_actions)} gold calls")
    label = CORRECT if all(r == CORRECT for r in results) else ERROR
    output["current_action_arguments_label"] = label
    if label == ERROR:
        output["current_action_arguments_check_result"] = results
    return label


def _normalized_call(call: Any) -> dict[str, Any]:
    """A predicted call with text name and arguments: arguments that are not text are serialized first
    (docs/evaluation.md §5: the reference crashes on them)."""
    call = dict(call) if isinstance(call, dict) else {}
    function = dict(call.get("function")) if isinstance(call.get("function"), dict) else {}
    function["name"] = (
        function.get("name") if isinstance(function.get("name"), str) else str(function.get("name"))
    )
    if not isinstance(function.get("arguments"), str):
        function["arguments"] = json.dumps(function.get("arguments"), ensure_ascii=False)
    call["function"] = function
    return call


def _normalized_gold(action: Any) -> dict[str, Any]:
    action = dict(action) if isinstance(action, dict) else {}
    action["name"] = action.get("name") if isinstance(action.get("name"), str) else str(action.get("name"))
    if not isinstance(action.get("arguments"), str):
        action["arguments"] = json.dumps(action.get("arguments", {}), ensure_ascii=False)
    return action


def _copied(entry: dict[str, Any], *keys: str) -> dict[str, Any]:
    """A shallow copy of `entry` whose `keys` (when objects) are shallow copies too."""
    entry = dict(entry)
    for key in keys:
        if isinstance(entry.get(key), dict):
            entry[key] = dict(entry[key])
    return entry


def _insert_after_first(entry: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    items = [(k, v) for k, v in entry.items() if k != key]
    items.insert(1, (key, value))
    return dict(items)
