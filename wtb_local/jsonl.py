"""JSON-lines splitting shared by every reader (datasets, scripts, result and score files, recordings)."""

from __future__ import annotations

from collections.abc import Iterator


def json_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) for each non-blank line.

    Splits on "\\n" only: `str.splitlines()` also breaks at U+2028/U+0085, which rows written with
    `ensure_ascii=False` (as the reference writes them) may hold unescaped inside a string, e.g. in a raw
    completion."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield number, line
