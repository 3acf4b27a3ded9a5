"""Tool conversion (docs/evaluation.md §1): what the model sees, the result file keeps, the checker reads."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from wtb_local.contract.messages import ToolSchema


def convert_tools(tools: Sequence[Mapping[str, Any]]) -> list[ToolSchema]:
    """Every `"type": "float"` becomes `"type": "number"`.

    Done the reference's way, on the serialized text, so that it also rewrites the pattern wherever it
    occurs (e.g. inside an enum or a description that quotes a schema), exactly like the reference.
    Returns a fresh deep copy; the input is not modified.
    """
    text = json.dumps(tools, ensure_ascii=False).replace('"type": "float"', '"type": "number"')
    converted: list[ToolSchema] = json.loads(text)
    return converted


def tool_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """The function names of OpenAI-style tools, in tool order (entries without a name are skipped)."""
    names: list[str] = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return names
