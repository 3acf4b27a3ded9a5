"""The result file of a run: appended one session at a time, durable, resumable.

A session's line is written only when its four tasks are finished, then flushed and fsynced, so a line
in the file is a finished session. A process killed mid-write can leave a partial last line; reopening
the file drops it (and anything else that is not a complete session row) before appending again.

During a run the lines are written by a writer thread (`submit`), so the fsync (milliseconds on a shared
disk) never holds up the event loop that feeds the engine: rows are written in the order they were
submitted, and every row the thread finds waiting is written and fsynced together (group commit). The
line itself is serialised by the caller: that is CPU work under the GIL, and a thread holding the GIL for
a whole `json.dumps` would stall the loop at its next GIL release anyway (docs/runner-speed.md §3). A row's callback runs only after its fsync: the runner reports a session finished from
there, so a reported session survives a kill -9 (docs/runner-speed.md §3).

A write that fails (a full disk) is a `RecordError` naming the file: every row waiting in the writer thread
hears of it through its callback, later submits raise it, and `rows` keeps only the sessions whose line was
fsynced, the ones safe on disk (docs/reliability.md, "No hangs"). Nothing in the writer thread can end it
without every waiting row hearing why.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wtb_local.contract.errors import RecordError
from wtb_local.contract.rows import Dropped, read_result_lines, session_index

Durable = Callable[[BaseException | None], None]  # called in the writer thread after the row's fsync
_Item = tuple[dict[str, Any], str, Durable | None]  # a row, its line, its callback


def _row_text(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


class ResultStore:
    """Append-only JSON-lines file of finished sessions."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.rows: dict[str, dict[str, Any]] = {}
        self.dropped_lines = 0
        self.dropped: list[Dropped] = []  # the lines `open` left out, and why (contract/run_dir.py)
        self.commits = 0  # fsyncs of submitted rows (group commits)
        self.write_s = 0.0  # the writer thread's busy time: writing and fsyncing
        self._handle: Any = None
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._error: RecordError | None = None
        self._texts: dict[str, str] = {}  # id -> the line written for it, so `finalize` writes it again as is

    def open(self, *, fresh: bool) -> None:
        """Start empty (`fresh`) or keep the finished sessions already in the file. Raises RecordError when
        the file cannot be written (then the file on disk is as it was)."""
        self.rows = {}
        self._texts = {}
        self.dropped_lines = 0
        self.dropped = []
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not fresh and self.path.exists():
                self._load_existing()
            # Rewrite what was kept so that a partial last line is not followed by new rows.
            self._write_all(sorted(self.rows.values(), key=lambda r: session_index(r["id"])))
            self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held for the whole run
        except OSError as exc:
            raise RecordError(self.path, exc) from exc

    def _load_existing(self) -> None:
        # the one rule for damaged records (contract/rows.py), so every command reading the file keeps the same rows
        read = read_result_lines(self.path)
        self.dropped = read.dropped
        self.dropped_lines = len(read.dropped)
        for _, row in read.rows:
            self.rows[row["id"]] = row

    def _write_all(self, rows: list[dict[str, Any]]) -> None:
        """Replace the file at once (temporary file + rename); on failure the file is as it was."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.writelines(self._texts.get(row["id"]) or _row_text(row) for row in rows)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)  # a full disk gets its space back
            raise

    def finished(self) -> set[str]:
        with self._lock:
            return set(self.rows)

    def append(self, row: dict[str, Any]) -> None:
        """Write one finished session durably (flush + fsync) before returning."""
        if self._handle is None:
            raise RuntimeError(f"{self.path}: result store is not open")
        self.wait()  # rows submitted earlier come first
        text = _row_text(row)
        try:
            self._handle.write(text)
            self._handle.flush()
            os.fsync(self._handle.fileno())
        except OSError as exc:
            self._error = RecordError(self.path, exc)
            raise self._error from exc
        with self._lock:
            self.rows[row["id"]] = row
            self._texts[row["id"]] = text

    def submit(self, row: dict[str, Any], durable: Durable | None = None) -> None:
        """Hand one finished session to the writer thread; `durable(None)` is called (in that thread) once
        it is fsynced, `durable(error)` if writing failed. The row must not change afterwards."""
        if self._handle is None:
            raise RuntimeError(f"{self.path}: result store is not open")
        text = _row_text(row)
        with self._lock:  # the writer thread fails waiting rows under this lock: none is missed
            if self._error is not None:
                raise self._error
            if self._thread is None:
                self._thread = threading.Thread(target=self._write_loop, name="wtb-result-writer", daemon=True)
                self._thread.start()
            self._queue.put((row, text, durable))

    def wait(self) -> None:
        """Until every submitted row is written and fsynced (the writer thread ends; a later submit starts
        another). Raises if writing failed."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._error is not None:
            raise self._error

    def drain(self, timeout: float) -> None:
        """Let the writer thread write what it was given, waiting at most `timeout` seconds; never raises.
        For a process about to end at once (a second signal): it may run inside a signal handler, so it
        takes no lock (SimpleQueue.put may be called there)."""
        thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)

    def _write_loop(self) -> None:
        stop = False
        while not stop:
            batch = [self._queue.get()]
            while True:  # group commit: everything already waiting goes into this fsync
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = None in batch
            items = [item for item in batch if item is not None]
            if items:
                self._commit(items)

    def _commit(self, items: list[_Item]) -> None:
        """Write and fsync `items`, then call their callbacks; never raises (the thread must not end with
        rows waiting, or the run would wait for them forever)."""
        started = time.perf_counter()
        error = self._error
        if error is None:
            start = self._size()
            try:
                self._handle.write("".join(text for _, text, _ in items))
                self._handle.flush()
                os.fsync(self._handle.fileno())
                with self._lock:
                    for row, text, _ in items:
                        self.rows[row["id"]] = row
                        self._texts[row["id"]] = text
                self.commits += 1
            except BaseException as exc:  # noqa: BLE001 - reported to every waiting row and to wait()
                self._keep_landed(start, [(row, text) for row, text, _ in items])
                error = self._fail(exc)
        self.write_s += time.perf_counter() - started
        for _, _, durable in items:
            if durable is None:
                continue
            try:
                durable(error)
            except BaseException as exc:  # noqa: BLE001 - the callback's own failure stops the run too
                self._fail(exc)

    def _size(self) -> int | None:
        try:
            return os.fstat(self._handle.fileno()).st_size
        except (OSError, ValueError):
            return None

    def _keep_landed(self, start: int | None, items: list[tuple[dict[str, Any], str]]) -> None:
        """After a failed write, the rows whose whole line reached the file before the failure (a full disk
        takes the bytes that fit and refuses the rest): the next `open` keeps them, so they are counted as
        safe. The partial line after them is what the next `open` drops."""
        end = self._size()
        if start is None or end is None:
            return
        try:
            os.fsync(self._handle.fileno())  # what did land, made durable where the disk still allows
        except (OSError, ValueError):
            pass
        landed = start
        with self._lock:
            for row, text in items:
                landed += len(text.encode("utf-8"))
                if landed > end:
                    break
                self.rows[row["id"]] = row
                self._texts[row["id"]] = text

    def _fail(self, exc: BaseException) -> RecordError:
        with self._lock:
            if self._error is None:
                self._error = exc if isinstance(exc, RecordError) else RecordError(self.path, exc)
            return self._error

    def close(self) -> None:
        try:
            self.wait()
        finally:
            if self._handle is not None:
                self._handle.close()
                self._handle = None

    def finalize(self) -> list[dict[str, Any]]:
        """Close and rewrite the file sorted by numeric session id, so reruns give identical files. Raises
        RecordError when a row could not be written or the rewrite fails (the file then holds every row
        in `rows`, unsorted, and maybe a partial last line that the next `open` drops)."""
        self.close()
        rows = sorted(self.rows.values(), key=lambda r: session_index(r["id"]))
        try:
            self._write_all(rows)
        except OSError as exc:
            raise RecordError(self.path, exc) from exc
        return rows
