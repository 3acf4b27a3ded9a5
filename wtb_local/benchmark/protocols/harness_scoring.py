"""Scoring a result file the way the paper's harness did (paper-harness.md §3.1, §3.4).

Action verdicts come from the step loop (the same in both protocols, §4.1). Then, for tasks whose action
label is correct, every predicted call of every step is paired by name with a gold call (greedy, best
lenient score first) and the task fails when a pair scores < 0.7; anything the checker raises on turns
the task into an action error. Multi-tool buckets come from the gold DAG's structure (combine / serial /
cs), AP counts calls (not steps) over serial and cs tasks, OP is over combine and cs tasks.

The metric dict has the release metric's shape (so `report` reads both), plus a `protocol` key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from typing_extensions import TypedDict

from wtb_local.benchmark.evaluator.metrics import (
    FIRST_TURN,
    MULTI_TOOL,
    SUBSEQUENT_TURN,
    TASK_TYPES,
    TURN_SUBTYPES,
    session_index,
)
from wtb_local.benchmark.protocols.lenient import PASS_THRESHOLD, LenientCheckError, check_call
from wtb_local.benchmark.scoring.taxonomy import HARNESS_LABELS, PAPER, action_category
from wtb_local.contract.messages import CallFunction, ToolSchema
from wtb_local.contract.schema import PSEUDO_ACTIONS, Session

CORRECT, ERROR = "correct", "error"
# structure bucket -> the Table 7 column it feeds (paper-harness.md §3.4)
STRUCTURE_TYPES = {"combine": "Parallel Multi-Tool", "serial": "Sequential Multi-Tool", "cs": "Mixed Multi-Tool"}


class GoldAction(TypedDict):
    """A gold node's action as the dataset gives it (`Node.model_dump(mode="json")`)."""

    name: str
    arguments: Any


class GoldNodeEntry(TypedDict, total=False):
    """A gold node as the harness reads it: a release node dumped to JSON."""

    action: GoldAction
    observation: Any
    dependency_list: list[int]
    user_input: str | None


class PredictedStep(TypedDict):
    """One step of the harness's `predict_result`: what the model answered, as the result file has it."""

    content: Any
    tool_calls: Any


class FailingPair(TypedDict):
    """A predicted call whose best gold pairing scored under the threshold (§3.1 step 3)."""

    step: int
    name: str
    score: float
    scores: dict[str, float]
    gold_arguments: Any


class ArgumentErrors(TypedDict):
    """The argument error labels of one step (the harness's `{"idx", "error_type"}`)."""

    idx: int
    error_type: list[str]


def answer_structure(nodes: Sequence[GoldNodeEntry]) -> str | None:
    """`combine` (parallel), `serial`, `cs` (both) or None, from the non-pseudo nodes' dependencies read
    in node order: a node depending on the current group starts a new group (§3.4
    `analysis_answer_type`; node `idx` values are compared with `dependency_list` as the harness does)."""
    groups: list[list[Any]] = []
    current: list[Any] = []
    for position, node in enumerate(nodes):
        if node["action"]["name"] in PSEUDO_ACTIONS:
            continue
        idx = node.get("idx", position)
        if any(dep in current for dep in node.get("dependency_list") or []):
            groups.append(current)
            current = [idx]
        else:
            current.append(idx)
    if current:
        groups.append(current)
    serial = len(groups) > 1
    combine = any(len(group) > 1 for group in groups)
    if serial and combine:
        return "cs"
    return "serial" if serial else "combine" if combine else None


def gold_entries(session: Session) -> list[list[GoldNodeEntry]]:
    """Each task's gold nodes as JSON, the form the harness reads."""
    return [[cast(GoldNodeEntry, node.model_dump(mode="json")) for node in nodes]
            for nodes in session.english_answer_list]


def predicted_steps(task: dict[str, Any]) -> list[PredictedStep]:
    """The harness's `predict_result` of a task: per step {content, tool_calls} in step order."""
    log = task.get("inference_log")
    if not isinstance(log, dict):
        log = {}
    steps: list[PredictedStep] = []
    for key in sorted((k for k in log if k.startswith("step_")), key=lambda k: int(k.split("_")[1])):
        output = (log[key] or {}).get("inference_output") or {}
        steps.append({"content": output.get("content"), "tool_calls": output.get("tool_calls")})
    return steps


def check_task_arguments(nodes: Sequence[GoldNodeEntry], steps: Sequence[PredictedStep],
                         tools: Sequence[ToolSchema]) -> tuple[bool, list[FailingPair], list[ArgumentErrors]]:
    """(all pairs pass, failing pairs, [{"idx": step, "error_type": [...]}]) for one task (§3.1 step 3).
    Raises LenientCheckError where the harness raises (the caller makes the task an action error)."""
    by_tool = {tool["function"]["name"]: tool for tool in tools}
    gold: dict[str, list[GoldAction]] = {}
    for node in nodes:
        name = node["action"]["name"]
        if name not in PSEUDO_ACTIONS:
            gold.setdefault(name, []).append(node["action"])
    predicted: dict[str, list[tuple[int, CallFunction]]] = {}
    for idx, step in enumerate(steps):
        for call in step.get("tool_calls") or []:
            function = call["function"]
            predicted.setdefault(function["name"], []).append((idx, function))
    if set(predicted) != set(gold) or any(len(predicted[n]) != len(gold[n]) for n in predicted):
        raise LenientCheckError("predicted and gold calls differ by name or count")
    failing: list[FailingPair] = []
    errors: list[ArgumentErrors] = []
    passed = True
    for name, calls in predicted.items():
        paired: list[int] = []
        for idx, function in calls:
            best, best_id = -1.0, -1
            last_errors: list[str] = []
            last_scores: dict[str, float] = {}
            last_gold: GoldAction | None = None
            for gold_id, action in enumerate(gold[name]):
                if gold_id in paired:
                    continue
                score, scores, call_errors = check_call(function.get("arguments"), action["arguments"],
                                                        by_tool[name])
                # Harness quirk: the error list and gold shown are the last evaluated, not the best.
                last_errors, last_scores, last_gold = call_errors, scores, action
                if score > best:
                    best, best_id = score, gold_id
            if best < PASS_THRESHOLD:
                passed = False
                failing.append({"step": idx, "name": name, "score": best, "scores": last_scores,
                                "gold_arguments": last_gold["arguments"] if last_gold is not None else None})
                errors.append({"idx": idx, "error_type": last_errors})
            paired.append(best_id)
    return passed, failing, errors


def progress_calls(label: str, steps: Sequence[PredictedStep], node_count: int, failing: Sequence[Any]) -> int:
    """The AP numerator of one task (§3.4 `calculate_predict_result_steps`): all nodes when correct;
    otherwise the calls of every step but the last (1 for a text step), plus the last step's calls when
    argument pairs failed."""
    if label == CORRECT:
        return node_count
    done = 0
    for step in steps[:-1]:
        calls = step.get("tool_calls")
        done += len(calls) if calls else 1
    if failing and steps:
        calls = steps[-1].get("tool_calls")
        done += len(calls) if calls else 1
    return done


# the harness's 12 failure labels in its summary order (§3.3); the first seven are Table 8's action columns
ERROR_TYPES = tuple(HARNESS_LABELS.values())


def error_type(action_label: str, steps: Sequence[PredictedStep], nodes: Sequence[GoldNodeEntry],
               tool_names: set[str], argument_errors: Sequence[ArgumentErrors]) -> str:
    """The one failure category of a failed task in the harness's words (§3.2 `check_error_type`): the
    shared taxonomy (benchmark/scoring/taxonomy.py) with the paper scorer's rules."""
    if action_label == ERROR:
        label = action_category(steps, [node["action"]["name"] for node in nodes], tool_names)
    else:
        label = PAPER.parameter_category({"argument_errors": list(argument_errors)})
    return HARNESS_LABELS.get(label, "unclassified")  # unclassified: the harness asserts there


def score_task(task: dict[str, Any], nodes: Sequence[GoldNodeEntry], tools: Sequence[ToolSchema]) -> dict[str, Any]:
    """One task's lenient verdict: label, action label, argument label, optimal flag, structure, AP."""
    steps = predicted_steps(task)
    action = task.get("action_name_label")
    arguments = action
    failing: list[FailingPair] = []
    errors: list[ArgumentErrors] = []
    check_error = None
    if action == CORRECT:
        try:
            ok, failing, errors = check_task_arguments(nodes, steps, tools)
            arguments = CORRECT if ok else ERROR
        except (LenientCheckError, KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError) as exc:
            action = arguments = ERROR  # the harness flips both labels (§3.1 step 3)
            check_error = f"{type(exc).__name__}: {exc}"
    structure = answer_structure(nodes)
    # The task's own fields (its log, token counts) stay, so the entry reads like a release score entry.
    entry: dict[str, Any] = {
        "label": CORRECT if action == CORRECT and arguments == CORRECT else ERROR,
        **{key: value for key, value in task.items() if key != "label"},
        "action_name_label": action,
        "action_arguments_label": arguments,
        "is_optimal": bool(task.get("is_optimal")) and action == CORRECT,
        "structure": structure,
        "progress": [progress_calls(arguments or ERROR, steps, len(nodes), failing), len(nodes)],
        "failing_pairs": failing,
        "argument_errors": errors,
    }
    if check_error:
        entry["check_error"] = check_error
    if entry["label"] == ERROR:
        names = {tool["function"]["name"] for tool in tools}
        entry["error_type"] = error_type(action or ERROR, steps, nodes, names, errors)
    return entry


def score_rows_lenient(result_rows: Sequence[dict[str, Any]], sessions: Sequence[Session]) -> list[dict[str, Any]]:
    """Score rows `{"id", "results": [task entries]}` sorted by session number."""
    from wtb_local.benchmark.protocols.history import paper_tools  # deferred: start-up

    by_index = {session.index: session for session in sessions}
    rows = []
    for row in sorted(result_rows, key=lambda r: session_index(r["id"])):
        session = by_index[session_index(row["id"])]
        tools = paper_tools(session)  # the harness checks against the dataset's own schemas (§3.1)
        answers = gold_entries(session)
        tasks = row.get("result")
        if not isinstance(tasks, list):
            tasks = []
        results = [score_task(task, answers[i], tools) if isinstance(task, dict) else
                   {"label": ERROR, "structure": answer_structure(answers[i]), "progress": [0, len(answers[i])]}
                   for i, task in enumerate(tasks)]
        rows.append({"id": row["id"], "results": results})
    return rows


def _error_shares(score_rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each failure category's count and share of the failed tasks (Table 8's percentages, §3.3)."""
    counts = {name: 0 for name in ERROR_TYPES}
    for row in score_rows:
        for entry in row.get("results") or []:
            if entry.get("label") == ERROR and entry.get("error_type"):
                counts[entry["error_type"]] = counts.get(entry["error_type"], 0) + 1
    failed = sum(counts.values())
    return {name: {"count": n, "share": n / failed if failed else 0.0} for name, n in counts.items()}


def harness_metrics(score_rows: Sequence[dict[str, Any]], sessions: Sequence[Session], model_name: str) -> dict[str, Any]:
    """The release metric's sections computed with the harness's rules: task type accuracy by the type
    labels, P/S/S+P by DAG structure, AP = calls done / nodes over serial+cs, OP over combine+cs.
    Session accuracy (absent from the harness) is all four tasks correct, as in the release."""
    by_index = {session.index: session for session in sessions}
    counts: dict[str, dict[str, list[int]]] = {
        "total": {"task": [0, 0], "session": [0, 0]},
        "types": {name: [0, 0] for name in TASK_TYPES},
        "layers": {str(i): [0, 0] for i in range(4)},
        "subtypes": {name: [0, 0] for name in TURN_SUBTYPES},
        "optimal": {name: [0, 0] for name in ("Total", "Parallel Multi-Tool", "Mixed Multi-Tool")},
        "progress": {name: [0, 0] for name in ("Total", "Sequential Multi-Tool", "Mixed Multi-Tool")},
    }

    def add(section: str, name: str, good: bool) -> None:
        bucket = counts[section].setdefault(name, [0, 0])
        bucket[0] += int(good)
        bucket[1] += 1

    for row in score_rows:
        session = by_index[session_index(row["id"])]
        results = row.get("results") or []
        types = [t.value if hasattr(t, "value") else str(t) for t in session.english_task_types]
        subtypes = [t.value if hasattr(t, "value") else str(t) for t in session.english_turn_subtypes]
        answers = gold_entries(session)
        all_correct = True
        for i, task_type in enumerate(types):
            entry: dict[str, Any] = results[i] if i < len(results) else {"label": ERROR}
            good = entry.get("label") == CORRECT
            all_correct = all_correct and good
            add("total", "task", good)
            if MULTI_TOOL in task_type:
                add("types", MULTI_TOOL, good)
            if task_type in ("Single-Tool", "Clarify", "Chat"):
                add("types", task_type, good)
            structure = entry.get("structure", answer_structure(answers[i]))
            if structure in STRUCTURE_TYPES:
                add("types", STRUCTURE_TYPES[structure], good)
            add("layers", str(i), good)
            add("subtypes", FIRST_TURN if i == 0 else SUBSEQUENT_TURN, good)
            if i > 0:
                add("subtypes", subtypes[i - 1], good)
            if structure in ("combine", "cs"):
                optimal = good and bool(entry.get("is_optimal"))
                add("optimal", "Total", optimal)
                add("optimal", STRUCTURE_TYPES[structure], optimal)
            if structure in ("serial", "cs"):
                done, whole = entry.get("progress", [0, len(answers[i])])
                for name in ("Total", STRUCTURE_TYPES[structure]):
                    counts["progress"][name][0] += done
                    counts["progress"][name][1] += whole
        add("total", "session", all_correct)

    def buckets(section: str) -> dict[str, Any]:
        return {name: {"accuracy": c / t if t else 0.0, "correct_count": c, "total_count": t}
                for name, (c, t) in counts[section].items()}

    return {
        "model_name": model_name,
        "total_info": buckets("total"),
        "task_type_info": buckets("types"),
        "layer_info": buckets("layers"),
        "turn_subtype_info": buckets("subtypes"),
        "optimal_info": buckets("optimal"),
        "progress_info": {name: {"rate": c / t if t else 0.0, "complete_step": c, "total_step": t}
                          for name, (c, t) in counts["progress"].items()},
        "error_type_info": _error_shares(score_rows),
        "protocol": {"checker": "lenient", "rules": "paper-harness.md §3.1, §3.2, §3.4"},
    }

