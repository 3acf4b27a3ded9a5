"""Validation of one dataset line against the release schema (docs/evaluation.md §1).

Refuses what the reference implementation assumes and crashes without (cyclic or out-of-range
dependencies, unknown task types, per-task lists of different lengths, malformed tool schemas, ids that
the scorer cannot find), and warns about what it only trips over when a model reaches it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from wtb_local.benchmark.dataset.dag import ancestors, find_cycle
from wtb_local.benchmark.dataset.errors import DatasetError
from wtb_local.contract.schema import ASK_ACTION, PSEUDO_ACTIONS, Session, TaskType, TurnSubtype

ID_PREFIX = "wild_tool_bench_"
_ID_RE = re.compile(r"^wild_tool_bench_(\d+)$")
_TASK_TYPES = [t.value for t in TaskType]
_TURN_SUBTYPES = [t.value for t in TurnSubtype]


class _Row:
    """Where a line sits, to build errors and warnings that name it."""

    def __init__(self, path: str, line: int, session_id: str | None) -> None:
        self.path = path
        self.line = line
        self.session_id = session_id
        self.warnings: list[str] = []

    def error(self, field: str | None, reason: str) -> DatasetError:
        return DatasetError(self.path, reason, line=self.line, session_id=self.session_id, field=field)

    def warn(self, field: str | None, reason: str) -> None:
        self.warnings.append(str(self.error(field, reason)))


def validate_line(text: str, *, path: str, line: int, position: int) -> tuple[Session, list[str]]:
    """Parse and check one non-blank line; `line` is its 1-based line number, `position` the 0-based
    count of sessions before it (the N its id must carry). Returns the session and its warnings."""
    row = _Row(path, line, None)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise row.error(None, f"malformed JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(raw, dict):
        raise row.error(None, f"expected a JSON object, got {_json_type(raw)}")
    _check_id(raw, row, position)
    _check_labels(raw, row)
    try:
        session = Session.model_validate(raw)
    except ValidationError as exc:
        raise _pydantic_error(exc, row) from None
    _check_lengths(session, row)
    _check_tools(raw["english_tools"], row)
    for t, nodes in enumerate(raw["english_answer_list"]):
        _check_task(nodes, t, row)
    _warn_undefined_actions(session, row)
    return session, row.warnings


# --- identity and labels -----------------------------------------------------------------------------


def _check_id(raw: dict[str, Any], row: _Row, position: int) -> None:
    if "id" not in raw:
        raise row.error("id", "missing")
    value = raw["id"]
    if not isinstance(value, str):
        raise row.error("id", f"expected a string, got {_json_type(value)}")
    row.session_id = value
    match = _ID_RE.match(value)
    if match is None:
        raise row.error("id", f"{value!r} is not of the form {ID_PREFIX}<N>")
    expected = f"{ID_PREFIX}{position}"
    if value != expected:
        raise row.error(
            "id",
            f"expected {expected!r} here: the scorer finds session N by its id's suffix, so the N-th "
            f"session (counting from 0) must be {ID_PREFIX}N",
        )


def _check_labels(raw: dict[str, Any], row: _Row) -> None:
    """Unknown task types and turn subtypes, named before pydantic's longer enum message."""
    for field, known, what in (
        ("english_task_types", _TASK_TYPES, "task type"),
        ("english_turn_subtypes", _TURN_SUBTYPES, "turn subtype"),
    ):
        values = raw.get(field)
        if not isinstance(values, list):
            continue
        for i, value in enumerate(values):
            if isinstance(value, str) and value not in known:
                raise row.error(f"{field}[{i}]", f"unknown {what} {value!r} (known: {', '.join(known)})")


def _pydantic_error(exc: ValidationError, row: _Row) -> DatasetError:
    first = exc.errors()[0]
    field = _loc_text(first["loc"])
    if first["type"] == "missing":
        return row.error(field, "missing")
    return row.error(field, f"{first['msg']} (got {_json_type(first.get('input'))})")


def _loc_text(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


# --- per-task lists ----------------------------------------------------------------------------------


def _check_lengths(session: Session, row: _Row) -> None:
    n = len(session.english_tasks)
    if n == 0:
        raise row.error("english_tasks", "a session needs at least one task")
    expected = {
        "english_answer_list": n,
        "english_task_types": n,
        "english_turn_subtypes": n - 1,
    }
    if session.answer_list is not None:
        expected["answer_list"] = n
    for field, want in expected.items():
        got = len(getattr(session, field))
        if got != want:
            per = "one per task after the first" if field == "english_turn_subtypes" else "one per task"
            raise row.error(field, f"has {got} entries, expected {want} ({per}; english_tasks has {n})")


# --- tools -------------------------------------------------------------------------------------------


def _check_tools(tools: list[dict[str, Any]], row: _Row) -> None:
    seen: dict[str, dict[str, Any]] = {}
    for i, tool in enumerate(tools):
        field = f"english_tools[{i}]"
        function = tool.get("function")
        if not isinstance(function, dict):
            raise row.error(f"{field}.function", f"expected an object, got {_json_type(function)}")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise row.error(f"{field}.function.name", f"expected a non-empty string, got {_json_type(name)}")
        if name in PSEUDO_ACTIONS:
            raise row.error(f"{field}.function.name", f"{name!r} is reserved for a pseudo-action")
        # The release repeats some tools verbatim (harmless); differing twins make the last one count.
        if name in seen and seen[name] != tool:
            row.warn(
                f"{field}.function.name",
                f"tool {name!r} is defined twice, differently; the last definition counts",
            )
        seen[name] = tool
        if "parameters" not in function:
            raise row.error(f"{field}.function.parameters", "missing")
        _check_schema(function["parameters"], f"{field}.function.parameters", row)


def _check_schema(node: Any, field: str, row: _Row) -> None:
    """The shapes the argument checker walks (docs/evaluation.md §5): it crashes on anything else."""
    if not isinstance(node, dict):
        raise row.error(field, f"schema node must be an object, got {_json_type(node)}")
    kind = node.get("type")
    if (
        kind is not None
        and not isinstance(kind, str)
        and not (isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind))
    ):
        raise row.error(f"{field}.type", f"expected a type name or a list of them, got {_json_type(kind)}")
    if "required" in node and not isinstance(node["required"], list):
        raise row.error(f"{field}.required", f"must be a list, got {_json_type(node['required'])}")
    if "enum" in node and not isinstance(node["enum"], list):
        raise row.error(f"{field}.enum", f"must be a list, got {_json_type(node['enum'])}")
    if "properties" in node:
        properties = node["properties"]
        if not isinstance(properties, dict):
            raise row.error(f"{field}.properties", f"must be an object, got {_json_type(properties)}")
        for key, sub in properties.items():
            _check_schema(sub, f"{field}.properties.{key}", row)
    if "items" in node:
        _check_schema(node["items"], f"{field}.items", row)
    if "anyOf" in node:
        branches = node["anyOf"]
        if not isinstance(branches, list) or not branches:
            raise row.error(f"{field}.anyOf", "must be a non-empty list of schemas")
        for k, sub in enumerate(branches):
            _check_schema(sub, f"{field}.anyOf[{k}]", row)


# --- gold graphs -------------------------------------------------------------------------------------


def _check_task(nodes: list[dict[str, Any]], t: int, row: _Row) -> None:
    field = f"english_answer_list[{t}]"
    if not nodes:
        raise row.error(field, "task has no node")
    n = len(nodes)
    deps: list[list[int]] = []
    for j, node in enumerate(nodes):
        node_deps = node.get("dependency_list", [])
        for d in node_deps:
            # pydantic's lax mode would accept "1" or 1.0; the reference indexes lists with them.
            if type(d) is not int:
                raise row.error(f"{field}[{j}].dependency_list", f"position {d!r} is not an integer")
            if not 0 <= d < n:
                raise row.error(
                    f"{field}[{j}].dependency_list", f"position {d} out of range (task has {n} nodes)"
                )
        deps.append(list(node_deps))
        if node["action"]["name"] == ASK_ACTION and not isinstance(node.get("user_input"), str):
            raise row.error(f"{field}[{j}].user_input", "an ask node needs the user's answer (a string)")
    cycle = find_cycle(deps)
    if cycle is not None:
        chain = " -> ".join(str(c) for c in cycle)
        raise row.error(f"{field}", f"dependency cycle {chain} (each node depends on the next)")
    _warn_shared_pseudo_steps(nodes, deps, field, row)


def _warn_shared_pseudo_steps(
    nodes: list[dict[str, Any]], deps: list[list[int]], field: str, row: _Row
) -> None:
    """A pseudo-action and a node that neither precedes nor follows it can be ready at the same time,
    so one candidate step holds both; the reference asserts when such a step is reached."""
    anc = ancestors(deps)
    for p, node in enumerate(nodes):
        name = node["action"]["name"]
        if name not in PSEUDO_ACTIONS:
            continue
        # Each pair once: a pair of pseudo-actions is reported on the first of the two.
        free = [
            q
            for q in range(len(nodes))
            if q != p
            and q not in anc[p]
            and p not in anc[q]
            and not (q < p and nodes[q]["action"]["name"] in PSEUDO_ACTIONS)
        ]
        if free:
            others = ", ".join(f"{q} ({nodes[q]['action']['name']})" for q in free)
            row.warn(f"{field}[{p}]", f"pseudo-action {name!r} could share a step with node(s) {others}")


def _warn_undefined_actions(session: Session, row: _Row) -> None:
    defined = {tool.get("function", {}).get("name") for tool in session.english_tools}
    for t, nodes in enumerate(session.english_answer_list):
        for j, node in enumerate(nodes):
            name = node.action.name
            if name not in PSEUDO_ACTIONS and name not in defined:
                row.warn(
                    f"english_answer_list[{t}][{j}].action.name",
                    f"{name!r} is not among english_tools (the checker reports 'tool not defined')",
                )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
