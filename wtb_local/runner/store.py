"""The result file of a run: appended one session at a time, durable, resumable.

A session's line is written only when its four tasks are finished, then flushed and fsynced, so a line
in the file is a finished session. A process killed mid-write can leave a partial last line; reopening
the file drops it (and anything else that is not a complete session row) before appending again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def session_index(session_id: str) -> int:
    """N of `wild_tool_bench_N` (ids without a numeric suffix sort last)."""
    tail = session_id.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else 1 << 62


def _row_text(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


def _is_session_row(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("id"), str) and "result" in value


class ResultStore:
    """Append-only JSON-lines file of finished sessions."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.rows: dict[str, dict[str, Any]] = {}
        self.dropped_lines = 0
        self._handle: Any = None

    def open(self, *, fresh: bool) -> None:
        """Start empty (`fresh`) or keep the finished sessions already in the file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.rows = {}
        self.dropped_lines = 0
        if not fresh and self.path.exists():
            self._load_existing()
        # Rewrite what was kept so that a partial last line is not followed by new rows.
        self._write_all(sorted(self.rows.values(), key=lambda r: session_index(r["id"])))
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held for the whole run

    def _load_existing(self) -> None:
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    self.dropped_lines += 1
                    continue
                if not _is_session_row(row) or row["id"] in self.rows:
                    self.dropped_lines += 1
                    continue
                self.rows[row["id"]] = row

    def _write_all(self, rows: list[dict[str, Any]]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.writelines(_row_text(row) for row in rows)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)

    def finished(self) -> set[str]:
        return set(self.rows)

    def append(self, row: dict[str, Any]) -> None:
        """Write one finished session durably (flush + fsync) before anything else happens."""
        if self._handle is None:
            raise RuntimeError(f"{self.path}: result store is not open")
        self._handle.write(_row_text(row))
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self.rows[row["id"]] = row

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def finalize(self) -> list[dict[str, Any]]:
        """Close and rewrite the file sorted by numeric session id, so reruns give identical files."""
        self.close()
        rows = sorted(self.rows.values(), key=lambda r: session_index(r["id"]))
        self._write_all(rows)
        return rows
