"""The run record: one object owns the manifest of a run from its first write to its last
(docs/reliability.md, "The run record").

`RunRecord` holds the manifest in memory, the run directory's lock (contract/lock_file.py) and the result
store it counts finished sessions in. `begin` writes the invocation with status `running` before any session runs; `close`
ends it, once, with `complete`, `incomplete`, `interrupted` or `failed` and the one-line reason; `abandon`
is what a second signal does (stopping.py): the manifest says `interrupted`, the one line is printed and the
process exits at once. A process killed outright cannot write anything: the next run into the folder marks
the invocation it left open as `killed`, and `status_note` (analysis/reports/run_status.py) tells `report` and `score` that a manifest which
still says `running` with no live holder of the lock belongs to a process that died.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wtb_local.contract.errors import RecordError
from wtb_local.contract.lock_file import RunLock
from wtb_local.contract.run_dir import as_manifest
from wtb_local.run.record.manifest import MANIFEST_NAME, write_manifest

DRAIN_S = 1.0  # how long a second signal lets the writer thread finish the rows it was given
KILLED = "killed"  # the status of an invocation whose process ended without closing it


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def interrupted_line(signal_name: str, kept: int, result_file: Path) -> str:
    return (f"interrupted by {signal_name}: {kept} finished session(s) kept in {result_file}; rerun the same "
            "command to resume")


def mark_killed(invocations: list[Any]) -> int:
    """Mark the invocations a killed process left open (no `finished`, or still `running`) as killed; how
    many there were. Every earlier invocation is closed by then: only this run's may say running."""
    count = 0
    for invocation in invocations:
        if isinstance(invocation, dict) and ("finished" not in invocation or invocation.get("status") == "running"):
            invocation.update(finished=None, status=KILLED)
            count += 1
    return count


class RunRecord:
    """The manifest of one run in progress (see the module docstring). `figures` gives the invocation's
    counters so far (requests, tokens, throughput); the job sets it."""

    def __init__(self, run_dir: Path, manifest: dict[str, Any], *, lock: RunLock, store: Any, stop: Any,
                 result_file: Path, started: float | None = None, err: Any = None) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / MANIFEST_NAME
        self.manifest = manifest
        self.lock = lock
        self.store = store
        self.stop = stop
        self.result_file = result_file
        self.err = err or sys.stderr
        self.invocation: dict[str, Any] | None = None
        self.figures: Callable[[], dict[str, Any]] = dict
        self.on_disk: str | None = None  # the status the manifest on disk says (None: not written by us)
        self.closed = False
        self._started = time.monotonic() if started is None else started  # the command's start
        # the manifest's invocations, the earlier ones as written; this one is appended by `begin`
        self.invocations: list[Any] = self.manifest.setdefault("invocations", [])
        mark_killed(self.invocations)
        stop.last_resort = self.abandon

    # --- the record on disk -----------------------------------------------------------------------------

    def begin(self, invocation: dict[str, Any]) -> None:
        """The invocation, with status `running`, on disk before any session runs (a process killed outright
        still leaves it there). Raises RecordError when the manifest cannot be written."""
        self.invocation = invocation
        self.invocations.append(invocation)
        self.manifest.update(status="running")
        self._write(self.manifest)

    def settle(self) -> None:
        """The invocation's end time and figures, taken when its sessions stop (written by `close`)."""
        if self.invocation is not None and "finished" not in self.invocation:
            self.invocation.update(finished=now(), wall_s=round(time.monotonic() - self._started, 3))
            self.invocation.update(self.figures())

    def _count_written(self, invocation: dict[str, Any]) -> None:
        """`sessions_run` as the result file holds it now: the figures are taken when the sessions stop, but
        the writer thread may still be finishing rows then (it is drained before a close or an abandon)."""
        written = self.figures().get("sessions_run")
        if written is not None:
            invocation["sessions_run"] = written

    def close(self, status: str, failure: str | None = None, **fields: Any) -> str | None:
        """End the invocation and the run with `status` (and the one-line `failure`), adding `fields` to the
        manifest. Never raises for the write: returns None when the record is on disk, else a clause saying
        it could not be written (and what the manifest on disk still says)."""
        with self.stop.holding():  # a first signal now waits until the record is on disk (stopping.py)
            self.settle()
            if self.invocation is not None:
                self._count_written(self.invocation)
                self.invocation["status"] = status
                if failure:
                    self.invocation["failure"] = failure
            self.manifest.update(fields, status=status)
            try:
                self._write(self.manifest)
            except RecordError as exc:
                return self.unwritten(exc)
            self.closed = True
            return None

    def unwritten(self, exc: RecordError) -> str:
        said = f"it still says {self.on_disk}" if self.on_disk else "it is as the previous run left it"
        return f"the manifest {self.path} could not be written either ({exc.reason}; {said})"

    def _write(self, manifest: dict[str, Any]) -> None:
        try:
            write_manifest(self.run_dir, manifest)
        except OSError as exc:
            tmp = self.path.with_name(self.path.name + ".tmp")
            try:
                tmp.unlink(missing_ok=True)  # a full disk gets its space back
            except OSError:
                pass
            raise RecordError(self.path, exc) from exc
        written = as_manifest(manifest)
        self.on_disk = str(written.status if written is not None else None)

    # --- a second signal --------------------------------------------------------------------------------

    def abandon(self, signal_name: str) -> None:
        """End the process now, the record saying so. Runs inside the signal handler, on the main thread
        between two of its bytecodes: it takes no lock, waits at most DRAIN_S for the writer thread (the
        rows it was given are finished sessions), writes a copy of the manifest and exits with 130."""
        line = interrupted_line(signal_name, len(self.store.rows), self.result_file)
        try:
            self.store.drain(DRAIN_S)
            line = interrupted_line(signal_name, len(self.store.rows), self.result_file)
            if not self.closed:
                invocations = list(self.invocations)
                if self.invocation is not None:
                    invocation = dict(self.invocation)
                    if "finished" not in invocation:
                        invocation.update(finished=now(), wall_s=round(time.monotonic() - self._started, 3))
                        invocation.update(self.figures())
                    self._count_written(invocation)
                    invocation["status"] = "interrupted"
                    invocations[-1] = invocation
                manifest = {**self.manifest, "invocations": invocations, "status": "interrupted"}
                try:
                    self._write(manifest)
                except RecordError as exc:
                    line += f"; {self.unwritten(exc)}"
        except BaseException as exc:  # noqa: BLE001 - the process ends whatever happened here
            line += f"; the record could not be completed ({type(exc).__name__}: {exc})"
        finally:
            self.lock.release()
            _stop_children()
            try:
                self.err.write(line + "\n")
                self.err.flush()
            finally:
                os._exit(130)


def _stop_children() -> None:
    """Ask the engine processes this one started (multiprocessing children) to stop; never waits. Render
    workers end by themselves when their pipe closes."""
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is None:
        return
    try:
        for child in multiprocessing.active_children():
            child.terminate()
    except Exception:  # noqa: BLE001, S110 - the process is ending: a child that cannot be signalled is left
        pass
