"""The end of a run cannot skip its record (docs/reliability.md, "The run record"): the result file's final
rewrite (`store.finalize()`) or the score files failing on a full disk still close the manifest `failed`
with the one line naming the file, and the rerun resumes with nothing left to run. In-process runs with
the oracle on the sample; the ENOSPC is monkeypatched into the one write."""

from __future__ import annotations

import asyncio
import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from wtb_local.run import RunError, run_job_async
from wtb_local.run.setup.options import RunOptions

FULL = "[Errno 28] No space left on device"
BOUND_S = 120


def _options(out: Path) -> RunOptions:
    return RunOptions(backend="oracle", model="Qwen/Qwen2.5-7B-Instruct", parser="hermes", dataset="sample",
                      out=str(out), progress="none")


def _run(out: Path) -> Any:
    return asyncio.run(asyncio.wait_for(run_job_async(_options(out)), BOUND_S))


def _full(path: str) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)


def test_a_final_rewrite_of_the_result_file_that_fails_still_closes_the_manifest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wtb_local.run.record.store import ResultStore

    real = ResultStore._write_all
    calls = [0]

    def write_all(self: ResultStore, rows: list[dict[str, Any]]) -> None:
        calls[0] += 1
        if calls[0] == 2:  # the first opens the file, the second is finalize's sorted rewrite
            raise _full(str(self.path))
        real(self, rows)

    monkeypatch.setattr(ResultStore, "_write_all", write_all)
    result = tmp_path / "result" / "Qwen_Qwen2.5-7B-Instruct" / "Wild-Tool-Bench_result.jsonl"
    with pytest.raises(RunError) as info:
        _run(tmp_path)
    assert str(info.value) == (f"disk full: writing {result} failed ({FULL}), run stopped; 8 finished "
                               "session(s) are safe on disk: free space and rerun the same command to resume")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    assert manifest["invocations"][-1]["failure"] == f"writing {result} failed ({FULL})"
    assert not list(result.parent.glob("*.tmp"))
    monkeypatch.setattr(ResultStore, "_write_all", real)
    assert _run(tmp_path).ran_sessions == []  # resumed: all 8 were safe
    assert json.loads((tmp_path / "manifest.json").read_text())["status"] == "complete"


def test_score_files_that_cannot_be_written_close_the_manifest_failed(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from wtb_local.benchmark.protocols import checkers  # scores a run's rows into its run directory

    real = checkers.write_score_files

    def write_score_files(out_dir: Any, model_name: str, *args: Any, **kwargs: Any) -> Any:
        raise _full(str(Path(out_dir) / "score" / "Qwen_Qwen2.5-7B-Instruct" / "Wild-Tool-Bench_score.jsonl"))

    monkeypatch.setattr(checkers, "write_score_files", write_score_files)
    score = tmp_path / "score" / "Qwen_Qwen2.5-7B-Instruct" / "Wild-Tool-Bench_score.jsonl"
    result = tmp_path / "result" / "Qwen_Qwen2.5-7B-Instruct" / "Wild-Tool-Bench_result.jsonl"
    with pytest.raises(RunError) as info:
        _run(tmp_path)
    assert str(info.value) == (f"disk full: writing {score} failed ({FULL}), run stopped; 8 finished "
                               f"session(s) are safe on disk in {result}: free space and rerun the same command "
                               "to resume")
    assert json.loads((tmp_path / "manifest.json").read_text())["status"] == "failed"
    monkeypatch.setattr(checkers, "write_score_files", real)
    assert _run(tmp_path).ran_sessions == []
    assert json.loads((tmp_path / "manifest.json").read_text())["status"] == "complete"
