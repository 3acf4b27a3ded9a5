"""Error taxonomy: one category per failed task, by the rules of the paper's own analysis script
(docs/reference/paper-harness.md §3.2-3.3). One implementation for both scorers; `Rules` holds what
differs between the release's (strict checker) and the paper harness's (lenient checker, --protocol paper):

- the parameter category is read from the record of the checker that failed the arguments: the strict
  checker's messages on the failing step (first failing call of the first failing step), or the lenient
  checker's error lists (the failing pair of the earliest step, by the §3.2 B precedence);
- `Run Error` (a step whose request was never served) exists for the release scorer only: the harness has
  no such notion, an unserved request was an empty answer there (§1.1) and is classified like one.

Pure: a scored task entry (score-file layout) plus the task's gold node names and the offered tool names
in, a label out. `annotate_categories` writes the label into score rows as `error_category` (null for a
correct task), after every reference field, so the score file stays readable by the reference.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wtb_local.contract.faults import failed_request
from wtb_local.contract.schema import ASK_ACTION, PREPARE_ACTION

REFUSAL = "Refusal"
WRONG_NAME = "Wrong Name"
MISSING_INFO = "Missing Info"
WRONG_REFUSAL = "Wrong Refusal"
REDUNDANT_CALL = "Redundant Call"
CALL_ERROR = "Call Error"
EARLY_TERMINATION = "Early Termination"
MISSING_PARAM = "Missing Param"
PARAM_HALLUCINATION = "Param Hallucination"
PARAM_TYPE_ERROR = "Param Type Error"
PARAM_VALUE_ERROR = "Param Value Error"
# The lenient checker's extra optional argument whose value its description does not mention (§3.1).
PARAM_VALUE_HALLUCINATION = "Param Value Hallucination"
# Not the paper's: a step whose request was never served (engine error, prompt too long, template
# failure) or a session recorded as an error string says nothing about the model; and a checker message
# this module does not know is shown as such rather than guessed.
RUN_ERROR = "Run Error"
UNCLASSIFIED = "Unclassified"

ACTION_LABELS = (REFUSAL, WRONG_NAME, MISSING_INFO, WRONG_REFUSAL, REDUNDANT_CALL, CALL_ERROR,
                 EARLY_TERMINATION)
PARAM_LABELS = (MISSING_PARAM, PARAM_HALLUCINATION, PARAM_TYPE_ERROR, PARAM_VALUE_HALLUCINATION, PARAM_VALUE_ERROR)
LABELS = (*ACTION_LABELS, *PARAM_LABELS, RUN_ERROR, UNCLASSIFIED)

# The paper's Table 4/8 columns (its CSV names) and the labels counted in each: Wrong Name and Missing
# Info share a column; a missing parameter counts as a value error, a hallucinated value as a hallucinated
# parameter (both inferences, §3.3). Run errors and unclassified tasks
# have no column (the paper dropped timeouts from its counts), so such a row sums to less than 100.
PAPER_COLUMNS: dict[str, tuple[str, ...]] = {
    "refusal": (REFUSAL,),
    "wrong_name_missing_info": (WRONG_NAME, MISSING_INFO),
    "wrong_refusal": (WRONG_REFUSAL,),
    "redundant_call": (REDUNDANT_CALL,),
    "call_error": (CALL_ERROR,),
    "early_termination": (EARLY_TERMINATION,),
    "param_type_error": (PARAM_TYPE_ERROR,),
    "param_hallucination": (PARAM_HALLUCINATION, PARAM_VALUE_HALLUCINATION),
    "param_value_error": (PARAM_VALUE_ERROR, MISSING_PARAM),
}
PAPER_HEADERS = ("Refusal", "Wrong Name / Missing Info", "Wrong Refusal", "Redundant Call", "Call Error",
                 "Early Termination", "Param Type Error", "Param Hallucination", "Param Value Error")

CATEGORY_KEY = "error_category"
CORRECT = "correct"
_KEYS = re.compile(r"error_match: args keys mismatch \((?P<detail>.*)\)")

# The harness script's labels (§3.3, its summary order) for ours; the lenient scorer writes these.
HARNESS_LABELS: dict[str, str] = {
    REFUSAL: "reject tool calling", WRONG_NAME: "function name hallucination",
    MISSING_INFO: "missing information in tool calling", WRONG_REFUSAL: "call function without reject",
    REDUNDANT_CALL: "redundant tool calling", CALL_ERROR: "call the wrong function", EARLY_TERMINATION: "early stop",
    MISSING_PARAM: "miss required params", PARAM_HALLUCINATION: "param hallucination",
    PARAM_TYPE_ERROR: "type error", PARAM_VALUE_HALLUCINATION: "param value hallucination",
    PARAM_VALUE_ERROR: "param value error",
}
# §3.2 B: the precedence among the lenient checker's labels of one failing pair.
_LENIENT_PRECEDENCE = (MISSING_PARAM, PARAM_HALLUCINATION, PARAM_TYPE_ERROR, PARAM_VALUE_HALLUCINATION,
                       PARAM_VALUE_ERROR)
# An API handler's content-filter marker (§3.2 A.3): a refusal, not a wrong name.
FILTER_CALL = "filter_by_prompt"

# Strict checker messages (docs/evaluation.md §5) -> label, by prefix; keys
# mismatch is split into missing/extra below.
_MESSAGE_PREFIXES: tuple[tuple[str, str], ...] = (
    ("error_schema: required args missing", MISSING_PARAM),
    ("error_schema: required nested args missing", MISSING_PARAM),
    ("error_schema: args not defined", PARAM_HALLUCINATION),
    ("error_schema: nested args not defined", PARAM_HALLUCINATION),
    ("error_schema: args type inconsistent", PARAM_TYPE_ERROR),
    ("error_schema: nested args type inconsistent", PARAM_TYPE_ERROR),
    ("error_schema: args value not in enum", PARAM_TYPE_ERROR),
    ("error_schema: nested args value not in enum", PARAM_TYPE_ERROR),
    ("error_match: value type inconsistent", PARAM_TYPE_ERROR),
    # arguments that are not JSON at all: the value does not even have the object type
    ("error: args invalid json format", PARAM_TYPE_ERROR),
    ("error_match: value mismatch", PARAM_VALUE_ERROR),
    ("error_match: string similarity too low", PARAM_VALUE_ERROR),
    ("error_match: array length mismatch", PARAM_VALUE_ERROR),
    ("error_match: rouge calculation failed", PARAM_VALUE_ERROR),
    ("error: comparison failed", PARAM_VALUE_ERROR),
)


def message_category(message: str) -> str:
    """The parameter label of one checker message; a keys mismatch that lacks a gold key is a missing
    parameter before it is a hallucinated one (the precedence)."""
    keys = _KEYS.match(message)
    if keys:
        detail = keys.group("detail")
        if "missing:" in detail:
            return MISSING_PARAM
        return PARAM_HALLUCINATION if "extra:" in detail else UNCLASSIFIED
    for prefix, label in _MESSAGE_PREFIXES:
        if message.startswith(prefix):
            return label
    return UNCLASSIFIED


def _steps(task: dict[str, Any]) -> list[dict[str, Any]]:
    log = task.get("inference_log")
    if not isinstance(log, dict):
        return []
    return [step for key, step in log.items() if key.startswith("step_") and isinstance(step, dict)]


def _output(step: dict[str, Any]) -> dict[str, Any]:
    output = step.get("inference_output")
    return output if isinstance(output, dict) else {}


def _valid_calls(output: Mapping[str, Any]) -> list[Any] | None:
    """The script's `check_toolcalls`: a non-empty list whose first call has `function.name`."""
    calls = output.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        return None
    first = calls[0]
    function = first.get("function") if isinstance(first, dict) else None
    if not isinstance(function, dict) or "name" not in function:
        return None
    return calls


def _call_name(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    return function.get("name") if isinstance(function, dict) else None


def _run_failure(output: dict[str, Any]) -> bool:
    """A step whose request was not served: the backends mark it `finish_reason: "error"`; a prompt that
    could not be rendered or built never reached a backend (the run's failed requests, wtb_local/contract/faults.py)."""
    return failed_request(output)


def _strict_parameter_category(task: dict[str, Any]) -> str:
    """First failing call of the first failing step, mapped from the strict checker's message."""
    for step in _steps(task):
        output = _output(step)
        if output.get("current_action_arguments_label") != "error":
            continue
        for message in output.get("current_action_arguments_check_result") or []:
            if message != CORRECT:
                return message_category(str(message))
        return UNCLASSIFIED
    return UNCLASSIFIED


_FROM_HARNESS = {name: label for label, name in HARNESS_LABELS.items()}


def _lenient_parameter_category(task: dict[str, Any]) -> str:
    """§3.2 B: the failing pair with the smallest step index, its first label by precedence. The
    harness asserts on an empty list (its pairing bug); that is Unclassified here."""
    errors = [e for e in task.get("argument_errors") or [] if isinstance(e, dict)]
    if not errors:
        return UNCLASSIFIED
    first = min(errors, key=lambda e: e.get("idx", 0)).get("error_type") or []
    found = {_FROM_HARNESS.get(str(name)) for name in first}
    return next((label for label in _LENIENT_PRECEDENCE if label in found), UNCLASSIFIED)


@dataclass(frozen=True)
class Rules:
    """What differs between the two scorers' taxonomies (module docstring)."""

    checker: str
    parameter_category: Callable[[dict[str, Any]], str]
    run_errors: bool


RELEASE = Rules("strict", _strict_parameter_category, run_errors=True)
PAPER = Rules("lenient", _lenient_parameter_category, run_errors=False)


def rules_for(checker: str) -> Rules:
    """The taxonomy rules of the scorer with this argument checker (`strict` or `lenient`)."""
    return PAPER if checker == "lenient" else RELEASE


def classify_task(task: Any, gold_names: Sequence[str], offered: Iterable[str], rules: Rules = RELEASE) -> str | None:
    """The category of one scored task (None when it is correct).

    `task` is a score-file task entry, or anything else for a session recorded as an error string;
    `gold_names` the action names of the task's gold nodes (pseudo-actions included), `offered` the
    names of the tools offered to the model; `rules` the scorer's (RELEASE or PAPER)."""
    if not isinstance(task, dict):
        return RUN_ERROR  # nothing was recorded to classify, with either scorer
    if task.get("label") == CORRECT:
        return None
    steps = _steps(task)
    if rules.run_errors and steps and _run_failure(_output(steps[-1])):
        return RUN_ERROR
    if task.get("action_name_label") == CORRECT:
        return rules.parameter_category(task)
    return action_category([_output(step) for step in steps], list(gold_names), set(offered))


def action_category(outputs: Sequence[Mapping[str, Any]], gold: Sequence[str], offered: set[str]) -> str:
    """§3.2 A (`check_error_type`, action branch) over the steps' outputs (`tool_calls` read); the
    first rule that fires wins."""
    gold = list(gold)
    if len(outputs) == 1 and _valid_calls(outputs[0]) is None:
        return REFUSAL
    if gold == [PREPARE_ACTION]:
        return WRONG_REFUSAL
    called: list[str] = []
    label: str | None = None
    for output in outputs:
        calls = _valid_calls(output)
        if calls is None:
            called.append(ASK_ACTION)  # a text turn counts as asking the user
            continue
        for call in calls:  # a label stops this step's calls; later steps still run (and may set another)
            name = _call_name(call)
            if name == FILTER_CALL:
                label = REFUSAL
                break
            if name not in offered:
                label = WRONG_NAME
                break
            called.append(name)
    if label is not None:
        return label
    if ASK_ACTION in gold and ASK_ACTION not in called:
        return MISSING_INFO
    if len(called) > len(gold) - 1:
        return REDUNDANT_CALL
    gold_only = Counter(gold) - Counter(called)
    called_only = Counter(called) - Counter(gold)
    if ASK_ACTION in gold_only:
        return MISSING_INFO
    if called_only:
        return CALL_ERROR if any(name not in gold for name in called) else REDUNDANT_CALL
    return EARLY_TERMINATION


def annotate_categories(score_rows: Sequence[dict[str, Any]], sessions: Sequence[Any]) -> None:
    """Set `error_category` on every task of the release scorer's score rows (in place; the lenient
    scorer writes the harness's `error_type` instead). A session recorded as an error
    string keeps its string; its tasks are counted as run errors by `row_categories`."""
    from wtb_local.benchmark.evaluator.metrics import session_index

    by_index = {session.index: session for session in sessions}
    for row in score_rows:
        results = row.get("results")
        if not isinstance(results, list):
            continue
        session = by_index[session_index(row["id"])]
        offered = session_tool_names(session)
        for i, task in enumerate(results):
            if isinstance(task, dict):
                task.pop(CATEGORY_KEY, None)
                task[CATEGORY_KEY] = classify_task(task, gold_names(session, i), offered)


def row_categories(row: dict[str, Any], session: Any, checker: str = "strict") -> list[str | None]:
    """Per dataset task of a score row: its category by the rules of the scorer with `checker` (computed,
    whatever the file says)."""
    rules = rules_for(checker)
    results = row.get("results")
    offered = session_tool_names(session)
    out: list[str | None] = []
    for i in range(len(session.english_tasks)):
        task = results[i] if isinstance(results, list) and i < len(results) else None
        out.append(classify_task(task, gold_names(session, i), offered, rules))
    return out


def gold_names(session: Any, task_idx: int) -> list[str]:
    return [node.action.name for node in session.english_answer_list[task_idx]]


def session_tool_names(session: Any) -> set[str]:
    names = set()
    for tool in session.english_tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names
