"""The rows of a result or score file: the one rule for a damaged record, and read-only typed views of a
session, its tasks and their steps (docs/files.md, "Damaged records"). The bytes on disk are never
rewritten by a reader: the reference's scorer reads the same files.

The rule. A file is read as bytes and split on "\\n" only (a U+2028 inside a string is text). Each line is
classified once, here (`classify`):
- the last line, when it is not UTF-8 text or not JSON (a kill or a full disk mid-write, also one cut
  inside a multi-byte character): `incomplete`; every reader drops it with the note `incomplete_note` gives, the
  same note `run` prints when it resumes over it;
- a line in the middle that is not a UTF-8 JSON object holding `id` and `result` (or `results`): `foreign`;
- a second row for a session: `duplicate`.
The run's result store, which must go on appending to its file, drops foreign and duplicate lines too,
naming each (`ResultLines.note`); every reader (`read_rows`) refuses them in one line naming file, line
and what was found, so a row is never scored unless the writer wrote it. A row whose id is not in the
dataset is refused by the scorer's checks (benchmark/scoring/checks.py), which know the dataset.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from wtb_local.contract.manifest import ResultRow

RESULT_KEYS = ("result",)  # what a session row of a result file holds
SCORE_KEYS = ("results",)  # ... of a score file
ROW_KEYS = ("result", "results")  # a result or a score file's row


class RowError(ValueError):
    """A row a reader cannot use; the message is one line naming file, line and what was found."""


@dataclass(frozen=True)
class Dropped:
    """A line left out: its number, what it was (`incomplete`, `foreign` or `duplicate`), the session of a
    duplicate and the line of its first row, and what the line holds (shortened)."""

    line: int
    kind: str
    session: str | None = None
    first: int | None = None
    found: str = ""
    why: str = "not a session row"  # of a foreign line: not UTF-8 text, not JSON, not a session row


@dataclass
class ResultLines:
    """The session rows of a result (or score) file, with their line numbers, and the lines left out."""

    rows: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)

    def note(self, path: str | Path) -> str | None:
        """One line saying what was left out, None when nothing was (the run's result store)."""
        if not self.dropped:
            return None
        incomplete = [d for d in self.dropped if d.kind == "incomplete"]
        if len(incomplete) == len(self.dropped):
            return incomplete_note(path, len(incomplete))
        parts = [f"{len(incomplete)} incomplete line(s) left by an interrupted run"] if incomplete else []
        for d in self.dropped:
            if d.kind == "foreign":
                parts.append(f"line {d.line}, which is not a session row (a whole line in the middle of the file)")
            elif d.kind == "duplicate":
                parts.append(f"line {d.line}, a second row for {d.session} (the first is kept)")
        return f"{path}: dropped " + "; ".join(parts)

    def refusal(self, path: str | Path) -> str | None:
        """The one line a reader refuses the file with: its first foreign or duplicate line; None when
        only an incomplete last line (or nothing) was left out."""
        for d in self.dropped:
            if d.kind == "duplicate":
                return f"{path}:{d.line}: id: {d.session} repeats line {d.first}"
            if d.kind == "foreign":
                return f"{path}:{d.line}: {d.why} (found {d.found}): not a row the run wrote"
        return None


def incomplete_note(path: str | Path, count: int = 1) -> str:
    """The note every reader gives for an incomplete last line it dropped."""
    return f"{path}: dropped {count} incomplete line(s) left by an interrupted run"


def numbered_lines(data: bytes) -> list[tuple[int, bytes]]:
    """(1-based number, line) of each non-blank line, split on b"\\n" only."""
    return [(n, line) for n, line in enumerate(data.split(b"\n"), start=1) if line.strip()]


def _shown(line: bytes) -> str:
    text = line.decode("utf-8", errors="replace").strip()
    return json.dumps(text if len(text) <= 40 else text[:37] + "...", ensure_ascii=False)


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _object(line: bytes) -> tuple[dict[str, Any] | None, str]:
    """The JSON object a line holds, or None and why not (not UTF-8 text, not JSON, not an object)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    try:
        value = json.loads(text)
    except ValueError:
        return None, "not JSON"
    return (value, "") if isinstance(value, dict) else (None, f"a JSON {type(value).__name__}, not an object")


def is_session_row(value: Any, keys: tuple[str, ...] = RESULT_KEYS) -> bool:
    """A JSON object holding one of `keys` that validates as a `ResultRow`."""
    if not isinstance(value, dict) or not any(k in value for k in keys):
        return False
    try:
        ResultRow.model_validate(value)
    except ValidationError:
        return False
    return True


def classify(data: bytes, keys: tuple[str, ...] = RESULT_KEYS) -> ResultLines:
    """The rule of the module docstring over a file's bytes."""
    read = ResultLines()
    seen: dict[str, int] = {}
    numbered = numbered_lines(data)
    for position, (number, line) in enumerate(numbered):
        row, why = _object(line)
        if row is None and position == len(numbered) - 1 and why in ("not UTF-8 text", "not JSON"):
            read.dropped.append(Dropped(number, "incomplete", found=_shown(line), why=why))
        elif row is None or not is_session_row(row, keys):
            read.dropped.append(Dropped(number, "foreign", found=_shown(line), why=why or "not a session row"))
        elif row["id"] in seen:
            read.dropped.append(Dropped(number, "duplicate", row["id"], seen[row["id"]], _shown(line)))
        else:
            seen[row["id"]] = number
            read.rows.append((number, row))
    return read


def read_result_lines(path: str | Path, keys: tuple[str, ...] = RESULT_KEYS) -> ResultLines:
    """`classify` of the file at `path`; OSError when it cannot be read."""
    return classify(Path(path).read_bytes(), keys)


def read_rows(path: str | Path, notes: list[str] | None = None,
              keys: tuple[str, ...] = ROW_KEYS) -> list[tuple[int, dict[str, Any]]]:
    """Every reader's rows of a result or score file, (line number, row) in file order: an incomplete last
    line dropped with its note added to `notes`; RowError (one line) for a foreign or duplicate line or a
    file that cannot be read."""
    try:
        read = read_result_lines(path, keys)
    except OSError as exc:
        raise RowError(f"{path}: cannot read: {exc.strerror or exc}") from None
    refusal = read.refusal(path)
    if refusal is not None:
        raise RowError(refusal)
    if read.dropped and notes is not None:
        notes.append(incomplete_note(path, len(read.dropped)))
    return read.rows


def session_index(session_id: str) -> int:
    """N of `wild_tool_bench_N`, the order of a result file's rows (ids without a numeric suffix sort last)."""
    tail = session_id.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else 1 << 62


# Read-only views. A view wraps a row as read; it never changes it (the scorer annotates its own copies).

def _mapping(value: Any) -> Mapping[str, Any]:
    return MappingProxyType(value) if isinstance(value, dict) else MappingProxyType({})


@dataclass(frozen=True)
class StepView:
    """`inference_log.step_<number>` of a task."""

    number: int
    data: Mapping[str, Any]

    @property
    def input(self) -> Mapping[str, Any]:
        return _mapping(self.data.get("inference_input"))

    @property
    def output(self) -> Mapping[str, Any]:
        return _mapping(self.data.get("inference_output"))

    @property
    def raw(self) -> str | None:
        """The completion text before parsing; None for a step without one (scripted runs, a failed request)."""
        value = self.output.get("raw")
        return value if isinstance(value, str) else None

    @property
    def finish_reason(self) -> str | None:
        value = self.output.get("finish_reason")
        return value if isinstance(value, str) else None

    @property
    def error_reason(self) -> str | None:
        value = self.output.get("error_reason")
        return value if isinstance(value, str) else None

    @property
    def tools(self) -> list[Any] | None:
        """The tools offered with the step's prompt."""
        value = self.input.get("tools")
        return value if isinstance(value, list) else None


@dataclass(frozen=True)
class TaskView:
    """One task of a session row (`result[position]` or `results[position]`)."""

    where: str  # file:line: session field, for errors
    position: int
    data: Mapping[str, Any]

    @property
    def log(self) -> Mapping[str, Any]:
        return _mapping(self.data.get("inference_log"))

    @property
    def task_idx(self) -> int:
        value = self.log.get("task_idx", self.position)
        return value if isinstance(value, int) and not isinstance(value, bool) else self.position

    @property
    def label(self) -> str | None:
        value = self.data.get("label")
        return value if isinstance(value, str) else None

    def steps(self) -> list[StepView]:
        """The task's steps in order; RowError naming the field for a step that is not an object."""
        found = []
        for key, entry in self.log.items():
            tail = key[5:] if key.startswith("step_") else ""
            if not tail.isdigit():
                continue
            if not isinstance(entry, dict):
                raise RowError(f"{self.where}[{self.position}].inference_log.{key}: expected an object, "
                               f"got {_json(entry)}")
            found.append(StepView(int(tail), MappingProxyType(entry)))
        return sorted(found, key=lambda step: step.number)


@dataclass(frozen=True)
class SessionView:
    """One session row of a result file (`result`) or a score file (`results`), read-only."""

    path: str
    line: int
    data: Mapping[str, Any]

    @classmethod
    def of(cls, path: str | Path, line: int, row: dict[str, Any]) -> SessionView:
        return cls(str(path), line, MappingProxyType(row))

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def key(self) -> str:
        return "results" if "results" in self.data and "result" not in self.data else "result"

    @property
    def crashed(self) -> str | None:
        """The reference's error text of a session that crashed (its tasks then all count as failed)."""
        value = self.data.get(self.key)
        return value if isinstance(value, str) else None

    def tasks(self) -> list[TaskView]:
        """The session's tasks; [] for a crashed session; RowError naming the field for a task that is not
        an object."""
        value = self.data.get(self.key)
        if not isinstance(value, list):
            return []
        where = f"{self.path}:{self.line}: {self.id}: {self.key}"
        for position, task in enumerate(value):
            if not isinstance(task, dict):
                raise RowError(f"{where}[{position}]: expected an object, got {_json(task)}")
        return [TaskView(where, position, MappingProxyType(task)) for position, task in enumerate(value)]


def read_sessions(path: str | Path, notes: list[str] | None = None,
                  keys: tuple[str, ...] = ROW_KEYS) -> list[SessionView]:
    """`read_rows` as session views."""
    return [SessionView.of(path, line, row) for line, row in read_rows(path, notes, keys)]


def iter_steps(sessions: list[SessionView]) -> Iterator[tuple[SessionView, TaskView, StepView]]:
    """Every (session, task, step) in file order."""
    for session in sessions:
        for task in session.tasks():
            for step in task.steps():
                yield session, task, step
