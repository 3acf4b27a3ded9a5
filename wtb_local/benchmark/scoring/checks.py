"""Structural checks of result and score rows before scoring: every problem becomes one ScoringError
line naming file, line, session id and field, instead of a traceback deep inside the scorer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wtb_local.benchmark.evaluator.metrics import session_index
from wtb_local.benchmark.scoring.files import ScoringError
from wtb_local.contract.schema import PSEUDO_ACTIONS, Session

CANDIDATE_0 = "candidate_0_answer_function_list"


def check_rows(
    rows: Sequence[tuple[int, dict[str, Any]]], sessions: Sequence[Session], source: str, key: str
) -> None:
    """Check result rows (`key="result"`) or score rows (`key="results"`) against the dataset."""
    by_index = {session.index: session for session in sessions}
    seen: dict[int, int] = {}
    for line, row in rows:
        where = f"{source}:{line}"
        session_id = row.get("id")
        if session_id is None:
            raise ScoringError(f"{where}: id: missing")
        try:
            index = session_index(session_id)
        except ValueError as exc:
            raise ScoringError(f"{where}: id: {exc}") from None
        session = by_index.get(index)
        if session is None or session.id != session_id:
            raise ScoringError(f"{where}: id: {session_id} is not in the dataset ({len(sessions)} sessions)")
        if index in seen:
            raise ScoringError(f"{where}: id: {session_id} repeats line {seen[index]}")
        seen[index] = line
        where = f"{where}: {session_id}"
        if key not in row:
            raise ScoringError(f"{where}: {key}: missing")
        tasks = row[key]
        if isinstance(tasks, str):
            continue  # a crashed session, recorded as its error text: every task counts as failed
        if not isinstance(tasks, list):
            raise ScoringError(f"{where}: {key}: expected a list of tasks or an error string")
        expected = len(session.english_tasks)
        if len(tasks) != expected:
            raise ScoringError(f"{where}: {key}: {len(tasks)} tasks, the dataset has {expected}")
        for i, task in enumerate(tasks):
            _check_task(task, f"{where}: {key}[{i}]", scored=key == "results")


def _check_task(task: Any, where: str, scored: bool) -> None:
    if not isinstance(task, dict):
        raise ScoringError(f"{where}: expected an object")
    fields = (
        ("label", "is_optimal", "inference_log")
        if scored
        else ("action_name_label", "is_optimal", "inference_log")
    )
    for field in fields:
        if field not in task:
            raise ScoringError(f"{where}.{field}: missing")
    log = task["inference_log"]
    if not isinstance(log, dict):
        raise ScoringError(f"{where}.inference_log: expected an object")
    if scored:
        return
    for name, step in log.items():
        if name.startswith("step_"):
            _check_step(step, f"{where}.inference_log.{name}")


def _check_step(step: Any, where: str) -> None:
    """The fields the argument scorer reads on an accepted step."""
    if not isinstance(step, dict):
        raise ScoringError(f"{where}: expected an object")
    output = step.get("inference_output")
    if not isinstance(output, dict):
        raise ScoringError(f"{where}.inference_output: missing or not an object")
    if "current_action_name_label" not in output:
        raise ScoringError(f"{where}.inference_output.current_action_name_label: missing")
    if output["current_action_name_label"] != "correct":
        return  # the walk stops here; a missing candidate is the spec's empty candidate
    answer = step.get("inference_answer")
    candidate = answer.get(CANDIDATE_0) if isinstance(answer, dict) else None
    if not isinstance(candidate, dict) or not isinstance(candidate.get("action"), list):
        raise ScoringError(f"{where}.inference_answer.{CANDIDATE_0}.action: missing or not a list")
    gold = candidate["action"]
    for j, action in enumerate(gold):
        if (
            not isinstance(action, dict)
            or not isinstance(action.get("name"), str)
            or "arguments" not in action
        ):
            raise ScoringError(
                f"{where}.inference_answer.{CANDIDATE_0}.action[{j}]: needs name and arguments"
            )
    if not gold or gold[0]["name"] in PSEUDO_ACTIONS:
        return
    tools = (
        step.get("inference_input", {}).get("tools")
        if isinstance(step.get("inference_input"), dict)
        else None
    )
    if not isinstance(tools, list):
        raise ScoringError(f"{where}.inference_input.tools: missing or not a list")
    calls = output.get("tool_calls")
    if not isinstance(calls, list) or len(calls) != len(gold):
        raise ScoringError(
            f"{where}.inference_output.tool_calls: expected {len(gold)} calls for the accepted candidate"
        )
    for j, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or "arguments" not in function
        ):
            raise ScoringError(f"{where}.inference_output.tool_calls[{j}].function: needs name and arguments")
