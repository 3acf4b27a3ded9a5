"""JSON-lines splitting shared by every reader (datasets, scripts, result and score files, recordings), and
the lenient read of one JSON object (manifests, model configs)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def json_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) for each non-blank line.

    Splits on "\\n" only: `str.splitlines()` also breaks at U+2028/U+0085, which rows written with
    `ensure_ascii=False` (as the reference writes them) may hold unescaped inside a string, e.g. in a raw
    completion."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield number, line


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`; None when the file is missing, unreadable, not JSON or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
