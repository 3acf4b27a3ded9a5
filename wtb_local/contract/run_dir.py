"""The one reader of a run directory's files, used by every command that reads one (run's resume, score,
report, explain, merge, rescore, parsers compare): the manifest, checked against its model, and the result
rows, read by the rule the run's own result store reopens its file with.

The rule for result lines. Every reader drops an incomplete last line (a last line that is not JSON: what
a killed or disk-full write leaves) and says so in one note, the same the run prints when it resumes over
it (`incomplete_note`). The run's result store, which must go on appending to the file, also drops a line
in the middle that is not a session row (written by something else) and a second row for a session (the
first is kept), naming each (`ResultLines.note`); the scoring readers refuse those with one line naming
the line instead (benchmark/scoring/files.py), as they refuse any other bad input.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wtb_local.contract.manifest import READABLE_VERSIONS, Manifest, ResultRow

MANIFEST_NAME = "manifest.json"


class ManifestError(ValueError):
    """A manifest that cannot be read or does not validate; the message is one line naming the field."""


class ManifestUnreadable(ManifestError):
    """A manifest that is not JSON at all (a reader may treat the folder as one without a manifest)."""


def check_manifest(data: Any, path: str | Path) -> Manifest:
    """`data` (a parsed manifest.json) as its model; ManifestError naming the first field that is wrong."""
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: not a run manifest (a JSON {type(data).__name__}, not an object)")
    version = data.get("schema_version", 1)
    if isinstance(version, int) and not isinstance(version, bool) and version not in READABLE_VERSIONS:
        raise ManifestError(f"{path}: schema_version {version}: written by another wtb_local (this one reads "
                            f"versions {', '.join(map(str, READABLE_VERSIONS))}); read it with the version that "
                            "wrote it")
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        got = json.dumps(error.get("input"), ensure_ascii=False, default=str)
        got = got if len(got) <= 40 else got[:37] + "..."
        raise ManifestError(f"{path}: field {where}: {error['msg'].lower()} (got {got})") from None


def as_manifest(value: Manifest | dict[str, Any] | None) -> Manifest | None:
    """A manifest a run built in memory (a dict, validated at every write) or one read, as its model."""
    if value is None or isinstance(value, Manifest):
        return value
    return check_manifest(value, MANIFEST_NAME)


def load_manifest(path: str | Path) -> Manifest | None:
    """The manifest at `path` (a manifest.json or its run directory) as its model; None when there is
    none. ManifestError (one line) when it is not JSON or does not validate. Every reader reads it so."""
    data = load_manifest_data(path)
    return None if data is None else Manifest.model_validate(data)


def load_manifest_data(path: str | Path) -> dict[str, Any] | None:
    """The manifest at `path`, checked against its model, as the dict it is: for the writers that update
    it (resume, merge, rescore) and write it back byte for byte (docs/architecture.md)."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ManifestUnreadable(f"{path}: unreadable run manifest ({' '.join(str(exc).split())})") from None
    check_manifest(data, path)
    return data


def write_manifest(run_dir: str | Path, manifest: dict[str, Any]) -> Path:
    """Atomic write (temporary file + rename) so a killed run never leaves half a manifest."""
    path = Path(run_dir) / MANIFEST_NAME
    check_manifest(manifest, path)  # written only as its model allows (manifest.py)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return path


def session_index(session_id: str) -> int:
    """N of `wild_tool_bench_N`, the order of a result file's rows (ids without a numeric suffix sort last)."""
    tail = session_id.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else 1 << 62


@dataclass(frozen=True)
class Dropped:
    """A result-file line the reader left out: its number, what it was (`incomplete`: not JSON and the
    last line; `foreign`: not JSON or not a session row, in the middle; `duplicate`: a second row for
    `session`)."""

    line: int
    kind: str
    session: str | None = None


@dataclass
class ResultLines:
    """The session rows of a result (or score) file, with their line numbers, and the lines left out."""

    rows: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)

    def note(self, path: str | Path) -> str | None:
        """One line saying what was left out, None when nothing was."""
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


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based number, line) of each non-blank line. "\n" only: a raw completion may hold U+2028
    unescaped (rows are written with ensure_ascii=False)."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield number, line


def incomplete_last(numbered: list[tuple[int, str]]) -> int | None:
    """The number of the last line when it is not JSON (an interrupted write), else None."""
    if not numbered:
        return None
    number, line = numbered[-1]
    try:
        json.loads(line)
    except ValueError:
        return number
    return None


def incomplete_note(path: str | Path, count: int = 1) -> str:
    """The note every reader gives for an incomplete last line it dropped."""
    return f"{path}: dropped {count} incomplete line(s) left by an interrupted run"


def is_session_row(value: Any, keys: tuple[str, ...] = ("result",)) -> bool:
    """A JSON object holding one of `keys` that validates as a `ResultRow`."""
    if not isinstance(value, dict) or not any(k in value for k in keys):
        return False
    try:
        ResultRow.model_validate(value)
    except ValidationError:
        return False
    return True


def parse_result_lines(text: str, keys: tuple[str, ...] = ("result",)) -> ResultLines:
    """The rule of the module docstring over a result file's text. `keys`: what a session row holds
    (`result` in a result file; `results` too where score files are read)."""
    read = ResultLines()
    seen: set[str] = set()
    numbered = list(numbered_lines(text))
    last = incomplete_last(numbered)
    for number, line in numbered:
        try:
            row = json.loads(line)
        except ValueError:
            read.dropped.append(Dropped(number, "incomplete" if number == last else "foreign"))
            continue
        if not is_session_row(row, keys):
            read.dropped.append(Dropped(number, "foreign"))
            continue
        if row["id"] in seen:
            read.dropped.append(Dropped(number, "duplicate", row["id"]))
            continue
        seen.add(row["id"])
        read.rows.append((number, row))
    return read


def read_result_lines(path: str | Path, keys: tuple[str, ...] = ("result",)) -> ResultLines:
    """`parse_result_lines` of the file at `path` (undecodable bytes replaced, as the run reads it).
    OSError when it cannot be read."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return parse_result_lines(handle.read(), keys)
