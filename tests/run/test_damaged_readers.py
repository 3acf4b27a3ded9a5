"""One rule for a damaged record, in every reader (docs/files.md, "Damaged records"): copies of a finished
oracle run, each damaged one way, read by each reader command. A partial last line (here cut inside a
two-byte UTF-8 character) is dropped with the note `run` gives; a foreign line, a repeated row, a row of
a session the dataset lacks, a manifest section of the wrong shape and a manifest that is not JSON are
refused in one line naming the file (and line, or field), never a traceback; no score file is written
from a row the run did not write."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.run.conftest import RESULT_NAME, SCORE_NAME, invoke, read_jsonl

MODEL_DIR = "oracle"
RESULT = Path("result") / MODEL_DIR / RESULT_NAME
# a row cut by a kill inside "é" (0xC3 0xA9): the last line holds the first byte only
CUT_UTF8 = '{"id": "wild_tool_bench_9", "result": [{"inference_log": {"step_0": {"inference_output": {"raw": "caf'


def _cli(*args: str) -> Any:
    from wtb_local.cli import cli

    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "run"
    done = invoke(["--backend", "oracle", "--parser", "hermes", "--dataset", "sample", "--out", str(out),
                   "--progress", "none"])
    assert done.exit_code == 0, done.stderr
    return out


def _rows(run: Path) -> list[dict[str, Any]]:
    return read_jsonl(run / RESULT)


def _write_rows(run: Path, rows: list[dict[str, Any]]) -> None:
    (run / RESULT).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _cut_utf8(run: Path) -> None:
    with open(run / RESULT, "ab") as handle:
        handle.write(CUT_UTF8.encode("utf-8") + "é".encode()[:1])


def _duplicate(run: Path) -> None:
    rows = _rows(run)
    _write_rows(run, [*rows, rows[0]])


def _foreign(run: Path) -> None:
    lines = (run / RESULT).read_text(encoding="utf-8").splitlines(keepends=True)
    (run / RESULT).write_text("".join([lines[0], '{"note": "hello"}\n', *lines[1:]]), encoding="utf-8")


def _unknown_id(run: Path) -> None:
    rows = _rows(run)
    rows[-1]["id"] = "wild_tool_bench_99"
    _write_rows(run, rows)


def _manifest(run: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    path = run / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def _protocol_string(run: Path) -> None:
    _manifest(run, lambda m: m.update(protocol="release"))


def _unreadable_manifest(run: Path) -> None:
    (run / "manifest.json").write_text("{not json", encoding="utf-8")


DAMAGES: dict[str, Callable[[Path], None]] = {
    "cut-utf8": _cut_utf8, "duplicate": _duplicate, "foreign": _foreign, "unknown-id": _unknown_id,
    "protocol-string": _protocol_string, "unreadable-manifest": _unreadable_manifest,
}


def _expected(damage: str, run: Path, reader: str) -> str:
    """The one line every reader gives (a note for the dropped line; the error otherwise)."""
    result, manifest = run / RESULT, run / "manifest.json"
    if damage == "cut-utf8":
        return f"{result}: dropped 1 incomplete line(s) left by an interrupted run"
    if damage == "duplicate":
        return f"{result}:9: id: wild_tool_bench_0 repeats line 1"
    if damage == "foreign":
        return f'{result}:2: not a session row (found "{{\\"note\\": \\"hello\\"}}"): not a row the run wrote'
    if damage == "unknown-id":
        hint = " (pass --dataset sample or the dataset file the run used)" if reader == "score" else ""
        return f"{result}:8: id: wild_tool_bench_99 is not in the dataset (8 sessions){hint}"
    if damage == "protocol-string":
        return f'{manifest}: field protocol: expected an object (got "release")'
    return (f"{manifest}: unreadable run manifest (Expecting property name enclosed in double quotes: line 1 "
            "column 2 (char 1))")


READERS: dict[str, Callable[[Path, Path], list[str]]] = {
    "score": lambda run, clean: ["score", str(run)],
    "rescore": lambda run, clean: ["rescore", str(run), "--checker", "lenient"],
    "report": lambda run, clean: ["report", str(run)],
    "explain": lambda run, clean: ["explain", str(run), str(clean)],
    "parsers-compare": lambda run, clean: ["parsers", "compare", str(run), "--parsers", "hermes,qwen3_xml",
                                           "--format", "json"],
    "export": lambda run, clean: ["export", str(run), "--to", "leaderboard", str(run.parent / "row.json")],
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_every_reader_gives_the_one_line_of_a_damaged_record(clean: Path, tmp_path: Path, damage: str,
                                                              reader: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(clean, run)
    shutil.rmtree(run / "score")  # any score file after the command was written by it
    DAMAGES[damage](run)
    done = _cli(*READERS[reader](run, clean))
    expected = _expected(damage, run, reader)
    if damage == "cut-utf8":  # dropped with the note; the rest read as the clean run
        assert done.exit_code == 0, done.output
        where = {"report": f"{MODEL_DIR}: ", "export": f"{MODEL_DIR}: ",
                 "explain": f"{run}: "}.get(reader, "")  # which run's note
        shown = f"note: {where}{expected}"
        assert shown in done.output.splitlines(), done.output
        if reader == "score":
            assert read_jsonl(run / "score" / MODEL_DIR / SCORE_NAME) == \
                read_jsonl(clean / "score" / MODEL_DIR / SCORE_NAME)
        return
    assert (done.exit_code, done.stderr.splitlines()) == (1, [f"Error: {expected}"]), done.output
    assert not (run / "score").exists() and not (run / "score-lenient").exists()
    assert not (run.parent / "row.json").exists()  # and no export of it


def _copy(clean: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(clean, run)
    return run


def test_rescore_reads_the_folders_own_result_file_never_the_recorded_path(clean: Path, tmp_path: Path) -> None:
    run = _copy(clean, tmp_path)  # a copied run: its manifest's `files.result` names the original's file
    (run / RESULT).unlink()
    done = _cli("rescore", str(run), "--checker", "lenient")
    assert (done.exit_code, done.stderr.splitlines()) == (
        1, [f"Error: {run}: not a run directory (no result/<model>/{RESULT_NAME})"]), done.output
    assert not (run / "score-lenient").exists()


def test_rescore_of_a_folder_it_cannot_write_is_one_line(clean: Path, tmp_path: Path) -> None:
    run = _copy(clean, tmp_path)
    (run / "run.lock").mkdir()  # what it must create to hold the folder cannot be written
    done = _cli("rescore", str(run), "--checker", "lenient")
    assert (done.exit_code, done.stderr.splitlines()) == (
        1, [f"Error: {run / 'run.lock'}: cannot write: Is a directory"]), done.output


def _edit_row(run: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    rows = _rows(run)
    edit(rows[2])
    _write_rows(run, rows)


def test_parsers_compare_reads_a_crashed_session_as_one_without_steps(clean: Path, tmp_path: Path) -> None:
    run = _copy(clean, tmp_path)
    _edit_row(run, lambda row: row.update(result="Error: the session crashed"))  # the reference's crash text
    done = _cli("parsers", "compare", str(run), "--parsers", "hermes,qwen3_xml", "--format", "json")
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    steps = sum(len([k for k in task["inference_log"] if k.startswith("step_")])
                for i, row in enumerate(_rows(clean)) if i != 2 for task in row["result"])
    assert report["recorded_steps"] == steps  # every other session's steps, none of the crashed one's


def test_parsers_compare_refuses_a_task_that_is_not_an_object_in_one_line(clean: Path, tmp_path: Path) -> None:
    run = _copy(clean, tmp_path)
    _edit_row(run, lambda row: row.update(result=[1, 2, 3, 4]))
    done = _cli("parsers", "compare", str(run), "--parsers", "hermes,qwen3_xml")
    assert (done.exit_code, done.stderr.splitlines()) == (
        1, [f"Error: {run / RESULT}:3: wild_tool_bench_2: result[0]: expected an object, got 1"]), done.output


def test_a_resume_refuses_a_hand_edited_summary_in_one_line(clean: Path, tmp_path: Path) -> None:
    run = _copy(clean, tmp_path)
    _manifest(run, lambda m: m["summary"].update(throughput="fast"))
    done = invoke(["--backend", "oracle", "--parser", "hermes", "--dataset", "sample", "--out", str(run),
                   "--progress", "none"])
    assert (done.exit_code, done.stderr.splitlines()) == (
        1, [(f'Error: {run / "manifest.json"}: field summary.throughput: expected an object (got "fast"); use '
             "--overwrite to start afresh")]), done.stderr


def test_the_run_directory_is_found_from_any_path_a_user_gives(clean: Path, tmp_path: Path) -> None:
    from wtb_local.contract.run_dir import RunDir

    run = _copy(clean, tmp_path)
    assert _cli("rescore", str(run), "--checker", "lenient").exit_code == 0
    score = run / "score" / MODEL_DIR / SCORE_NAME
    for given in (run, run / "manifest.json", run / RESULT, score, score.with_name("Wild-Tool-Bench_metric.json")):
        assert RunDir.find(given) == RunDir(run), given
    rescored = run / "score-lenient"
    assert RunDir.find(rescored / "score" / MODEL_DIR / SCORE_NAME) == RunDir(rescored)
    assert RunDir.holding(tmp_path / "loose.jsonl") is None
    found = RunDir.find(run)
    assert found is not None and found.manifest is not None and found.manifest.config.model_name == "oracle"
    assert [(s.checker, s.metric_file.relative_to(run).as_posix()) for s in found.score_sets()] == [
        (None, "score/oracle/Wild-Tool-Bench_metric.json"),
        ("lenient", "score-lenient/score/oracle/Wild-Tool-Bench_metric.json")]
    sessions, scores = found.sessions(), found.scores()
    assert [s.id for s in sessions] == [s.id for s in scores] == [f"wild_tool_bench_{i}" for i in range(8)]
    assert [len(s.tasks()) for s in sessions] == [4] * 8 and sessions[0].crashed is None
    assert [t.label for s in scores for t in s.tasks()] == ["correct"] * 32  # the oracle: every task right
    first = sessions[0].tasks()[0].steps()[0]
    assert (first.number, first.finish_reason) == (0, "stop") and isinstance(first.raw, str)
    with pytest.raises(TypeError):
        sessions[0].data["id"] = "x"  # type: ignore[index]  # read-only: the bytes on disk never change
