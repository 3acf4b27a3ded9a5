"""Local `$ref`s of a tool's parameter schema resolved in place, for the families whose upstream parsers type
values through them (dots, IQuest-Q1): `{"$ref": "#/$defs/Location"}` becomes the schema it names, so a
value is typed by the referenced type. Only references inside the same parameters object are followed
(`#/$defs/…`, `#/definitions/…`), to a bounded depth; anything else stays as written.
"""

from __future__ import annotations

import copy
from typing import Any

from wtb_local.contract.messages import ToolSchema

_MAX_DEPTH = 8


def _resolve(node: Any, root: dict[str, Any], depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return node
    if isinstance(node, list):
        return [_resolve(item, root, depth) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        if isinstance(target, dict):
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return _resolve(merged, root, depth + 1)
    return {key: _resolve(value, root, depth + 1) for key, value in node.items()}


def inline_refs(tools: list[ToolSchema] | None) -> list[ToolSchema] | None:
    """`tools` with every local `$ref` of each tool's parameters replaced by its target (a copy)."""
    if not tools:
        return tools
    out = []
    for tool in tools:
        tool = copy.deepcopy(tool) if isinstance(tool, dict) else tool
        fn: Any = tool.get("function") if isinstance(tool, dict) and isinstance(tool.get("function"), dict) else tool
        params = fn.get("parameters") if isinstance(fn, dict) else None
        if isinstance(fn, dict) and isinstance(params, dict) and "$ref" in str(params):
            fn["parameters"] = _resolve(params, params, 0)
        out.append(tool)
    return out
