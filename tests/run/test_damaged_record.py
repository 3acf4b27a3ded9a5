"""Readers survive what writers survive (docs/reliability.md, "Damaged records"): every command reading a
run directory drops an incomplete last line as `run` does, with the same note; a manifest that does not
validate against its model is refused in one line naming the field; a resume closes an invocation left
`running`; the run's warning about lines it drops says what it found; a write cut short by a full disk
counts as safe exactly the rows the rerun keeps."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.run.conftest import RESULT_NAME, invoke, read_jsonl, without_timing

MODEL_DIR = "oracle"
# what an interrupted write leaves: the head of a session row
PARTIAL = '{"id": "wild_tool_bench_9", "result": [{"inference_log": {"step_0": {"inference_output": {"raw": "<tool'


def _args(out: Path) -> list[str]:
    return ["--backend", "oracle", "--parser", "hermes", "--dataset", "sample", "--out", str(out),
            "--progress", "none"]


def _cli(*args: str) -> Any:
    from wtb_local.cli import cli

    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "run"
    done = invoke(_args(out))
    assert done.exit_code == 0, done.stderr
    return out


@pytest.fixture
def damaged(clean: Path, tmp_path: Path) -> Path:
    """The clean run with an incomplete last line after its 8 sessions."""
    out = tmp_path / "run"
    shutil.copytree(clean, out)
    with open(out / "result" / MODEL_DIR / RESULT_NAME, "a", encoding="utf-8") as handle:
        handle.write(PARTIAL)
    return out


def _note(out: Path) -> str:
    return f"{out / 'result' / MODEL_DIR / RESULT_NAME}: dropped 1 incomplete line(s) left by an interrupted run"


def test_every_reader_drops_an_incomplete_last_line_with_the_note_run_gives(clean: Path, damaged: Path,
                                                                            tmp_path: Path) -> None:
    note = _note(damaged)
    scored = _cli("score", str(damaged), "--out", str(tmp_path / "scored"))
    assert scored.exit_code == 0, scored.output
    assert f"note: {note}" in scored.stderr.splitlines()
    assert read_jsonl(tmp_path / "scored" / "Wild-Tool-Bench_score.jsonl") == \
        read_jsonl(clean / "score" / MODEL_DIR / "Wild-Tool-Bench_score.jsonl")

    reported = _cli("report", str(damaged))
    assert reported.exit_code == 0, reported.output
    assert f"note: {MODEL_DIR}: {note}" in reported.stdout.splitlines()

    rescored = _cli("rescore", str(damaged), "--checker", "lenient")
    assert rescored.exit_code == 0, rescored.output
    assert f"note: {note}" in rescored.stderr.splitlines()

    compared = _cli("parsers", "compare", str(damaged), "--parsers", "hermes,qwen3_xml", "--format", "json")
    assert compared.exit_code == 0, compared.output
    assert f"note: {note}" in compared.stderr.splitlines()

    # the run itself: the same note (as its warning), then a resume with nothing to run
    rerun = invoke(_args(damaged))
    assert rerun.exit_code == 0, rerun.stderr
    assert rerun.stderr.splitlines()[0] == f"warning: {note}"
    assert without_timing(read_jsonl(damaged / "result" / MODEL_DIR / RESULT_NAME)) == \
        without_timing(read_jsonl(clean / "result" / MODEL_DIR / RESULT_NAME))


def test_the_run_warning_says_what_it_found(clean: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(clean, out)
    result = out / "result" / MODEL_DIR / RESULT_NAME
    lines = result.read_text(encoding="utf-8").splitlines(keepends=True)
    # line 3: a whole foreign line; line 6: a second row for session 1; last: an incomplete line
    damaged = [*lines[:2], '{"note": "written by something else"}\n', *lines[2:4], lines[1], *lines[4:], PARTIAL]
    result.write_text("".join(damaged), encoding="utf-8")
    rerun = invoke(_args(out))
    assert rerun.exit_code == 0, rerun.stderr
    assert rerun.stderr.splitlines()[0] == (
        f"warning: {result}: dropped 1 incomplete line(s) left by an interrupted run; line 3, which is not a "
        "session row (a whole line in the middle of the file); line 6, a second row for wild_tool_bench_1 (the "
        "first is kept)")
    assert without_timing(read_jsonl(result)) == without_timing(read_jsonl(clean / "result" / MODEL_DIR /
                                                                           RESULT_NAME))


def _edit_manifest(out: Path, edit: Any) -> None:
    path = out / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    edit(manifest)
    path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def test_a_manifest_that_does_not_validate_is_refused_naming_the_field(clean: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(clean, out)
    _edit_manifest(out, lambda m: m.update(invocations="oops"))
    manifest = out / "manifest.json"
    field = f"{manifest}: field invocations: input should be a valid list (got \"oops\")"
    rerun = invoke(_args(out))
    assert rerun.exit_code == 1
    assert rerun.stderr.strip().splitlines() == [f"Error: {field}; use --overwrite to start afresh"]
    for command in (("score", str(out)), ("report", str(out))):
        done = _cli(*command)
        assert done.exit_code == 1, (command, done.output)
        assert done.stderr.strip().splitlines() == [f"Error: {field}"], command

    _edit_manifest(out, lambda m: m.update(invocations=[], schema_version=9))
    done = _cli("score", str(out))
    assert done.exit_code == 1
    assert done.stderr.strip() == (f"Error: {manifest}: schema_version 9: written by another wtb_local (this one "
                                   "reads versions 1, 2); read it with the version that wrote it")


def test_a_resume_closes_an_invocation_left_running(clean: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(clean, out)
    _edit_manifest(out, lambda m: m["invocations"][0].update(status="running", finished=None))
    rerun = invoke(_args(out))
    assert rerun.exit_code == 0, rerun.stderr
    first, second = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["invocations"]
    assert (first["status"], first["finished"]) == ("killed", None)
    assert second["status"] == "complete"


def test_a_manifest_written_before_schema_version_loads(clean: Path, tmp_path: Path) -> None:
    """Version 1: no `schema_version`, and `sessions_run` counting the sessions scheduled."""
    out = tmp_path / "run"
    shutil.copytree(clean, out)

    def older(manifest: dict[str, Any]) -> None:
        del manifest["schema_version"]
        for invocation in manifest["invocations"]:
            invocation["sessions_run"] = invocation.pop("sessions_scheduled")
            del invocation["internal_errors"], invocation["completions_reused"]

    _edit_manifest(out, older)
    assert _cli("report", str(out)).exit_code == 0
    rerun = invoke(_args(out))
    assert rerun.exit_code == 0, rerun.stderr
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8"))["schema_version"] == 2


class _FullDisk:
    """A result file handle on a disk with `room` bytes left: a write takes what fits, then fails."""

    def __init__(self, handle: Any, room: int) -> None:
        self.handle, self.room = handle, room

    def write(self, text: str) -> int:
        data = text.encode("utf-8")
        taken = data[:self.room]
        self.handle.buffer.write(taken)
        self.handle.buffer.flush()
        self.room -= len(taken)
        if len(taken) < len(data):
            raise OSError(errno.ENOSPC, "No space left on device")
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)


def test_a_full_disk_counts_as_safe_the_rows_whose_whole_line_landed(tmp_path: Path) -> None:
    from wtb_local.contract.errors import RecordError
    from wtb_local.contract.rows import read_result_lines
    from wtb_local.run.record.store import ResultStore

    rows = [{"id": f"wild_tool_bench_{i}", "result": [{"n": "x" * 100}]} for i in range(4)]
    line = len((json.dumps(rows[0]) + "\n").encode("utf-8"))
    store = ResultStore(tmp_path / "result.jsonl")
    store.open(fresh=True)
    store._handle = _FullDisk(store._handle, room=2 * line + 40)  # two whole lines and part of a third
    errors: list[BaseException | None] = []
    for row in rows:  # one group commit: the thread finds all four waiting
        store._queue.put((row, json.dumps(row) + "\n", errors.append))
    store._commit([store._queue.get() for _ in rows])
    assert all(isinstance(e, RecordError) for e in errors) and len(errors) == 4
    kept = read_result_lines(tmp_path / "result.jsonl")  # what the rerun keeps
    assert [r["id"] for _, r in kept.rows] == sorted(store.rows) == ["wild_tool_bench_0", "wild_tool_bench_1"]
    assert [d.kind for d in kept.dropped] == ["incomplete"]
