"""The one error type of the dataset layer: a one-line message naming file, line, session and field."""

from __future__ import annotations


class DatasetError(ValueError):
    """A dataset file that cannot be used, e.g.
    `data.jsonl:12: wild_tool_bench_11: english_answer_list[2][1].dependency_list: position 7 out of range
    (task has 4 nodes)`."""

    def __init__(
        self,
        path: str,
        reason: str,
        *,
        line: int | None = None,
        session_id: str | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.session_id = session_id
        self.field = field
        self.reason = reason
        parts = [f"{path}:{line}" if line is not None else path]
        if session_id:
            parts.append(session_id)
        if field:
            parts.append(field)
        parts.append(reason)
        # One line, whatever the reason text carried (pydantic messages can hold newlines).
        super().__init__(" ".join(": ".join(parts).split()))
