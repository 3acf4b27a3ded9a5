"""No hangs (docs/reliability.md, "No hangs"): an error injected into each callback of the session loop,
into the result writer's thread and into the render pool's loop callbacks reaches the run and ends it
with one line and a `failed` manifest, within a bounded wait. Before, a session-finished callback that
raised left the run waiting forever for a session that would never be reported, and so did the render
pool's reader. In-process runs (monkeypatched), each under `asyncio.wait_for`, so a hang fails the test."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.faults.record_cases import ROOT, complete_rows
from wtb_local.contract.errors import RecordError
from wtb_local.run import RunError, run_job_async
from wtb_local.run.errors import LoopError
from wtb_local.run.setup.options import RunOptions

BOUND_S = 120  # far beyond a run of the sample: reaching it means the run hung
MODEL_DIR = "Qwen_Qwen2.5-7B-Instruct"


def _options(out: Path, **extra: Any) -> RunOptions:
    return RunOptions(backend="oracle", model="Qwen/Qwen2.5-7B-Instruct", parser="hermes", dataset="sample",
                      out=str(out), progress="none", **extra)


def _third_call_raises(real: Callable[..., Any], seen: list[str], key: Callable[..., str]) -> Callable[..., Any]:
    """`real`, except that its third call raises ValueError("boom") (its session id kept in `seen`)."""
    calls = [0]

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 3:
            seen.append(key(*args, **kwargs))
            raise ValueError("boom")
        return real(*args, **kwargs)

    return wrapped


def _slow(real: Callable[..., Any]) -> Callable[..., Any]:
    """`real`, 0.2 s later each time (a row handed to the writer after it has committed the one before)."""
    def slow(*args: Any) -> Any:
        time.sleep(0.2)
        return real(*args)

    return slow


def _stopped(out: Path, options: RunOptions, **kwargs: Any) -> str:
    """Run until it stops with a RunError (never longer than BOUND_S); its message."""
    with pytest.raises(RunError) as info:
        asyncio.run(asyncio.wait_for(run_job_async(options, **kwargs), BOUND_S))
    return str(info.value)


def _kept(out: Path) -> tuple[Path, int]:
    result = out / "result" / MODEL_DIR / "Wild-Tool-Bench_result.jsonl"
    return result, len(complete_rows(result))


def _failed_with(out: Path, failure: str) -> None:
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    assert (manifest["invocations"][-1]["status"], manifest["invocations"][-1]["failure"]) == ("failed", failure)
    assert not (out / "run.lock").exists()


def test_counting_a_finished_sessions_labels_that_raises_stops_the_run(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from wtb_local.run import job

    seen: list[str] = []
    monkeypatch.setattr(job, "_label_counts", _third_call_raises(job._label_counts, seen, lambda row, _s: row["id"]))
    message = _stopped(tmp_path, _options(tmp_path))
    result, kept = _kept(tmp_path)
    [session] = seen
    assert message == (f"the session loop failed, run stopped (counting the labels of {session}: ValueError: boom); "
                       f"{kept} finished session(s) kept in {result}: rerun the same command to resume")
    assert kept >= 3  # the session was written before it was counted
    _failed_with(tmp_path, f"counting the labels of {session}: ValueError: boom")
    asyncio.run(asyncio.wait_for(run_job_async(_options(tmp_path)), BOUND_S))  # resumes


def test_a_progress_display_that_raises_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wtb_local.run.loop.progress import Progress

    seen: list[str] = []
    monkeypatch.setattr(Progress, "session_done", _third_call_raises(Progress.session_done, seen, lambda *_: "-"))
    message = _stopped(tmp_path, _options(tmp_path))
    result, kept = _kept(tmp_path)
    assert message.startswith("the session loop failed, run stopped (reporting wild_tool_bench_")
    session = message.split("(reporting ", 1)[1].split(" ", 1)[0]
    assert message == (f"the session loop failed, run stopped (reporting {session} to the progress display: "
                       f"ValueError: boom); {kept} finished session(s) kept in {result}: rerun the same command "
                       "to resume")
    _failed_with(tmp_path, f"reporting {session} to the progress display: ValueError: boom")


def test_building_a_sessions_row_that_raises_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wtb_local.benchmark.evaluator import episode

    seen: list[str] = []
    monkeypatch.setattr(episode, "session_result",
                        _third_call_raises(episode.session_result, seen, lambda session, *_a, **_k: session.id))
    message = _stopped(tmp_path, _options(tmp_path))
    result, kept = _kept(tmp_path)
    [session] = seen
    assert message == (f"the session loop failed, run stopped (building the result row of {session}: ValueError: "
                       f"boom); {kept} finished session(s) kept in {result}: rerun the same command to resume")
    _failed_with(tmp_path, f"building the result row of {session}: ValueError: boom")


def test_a_writer_thread_that_fails_stops_the_run_naming_the_file(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from wtb_local.run.record import store

    real = store.os.fsync
    calls, synced = [0], [0]

    def fsync(fd: int) -> None:  # the second commit fails, and what it wrote never reaches the disk
        if threading.current_thread().name == "wtb-result-writer":
            calls[0] += 1
            if calls[0] == 2:
                store.os.ftruncate(fd, synced[0])
                raise RuntimeError("the controller went away")
            real(fd)
            synced[0] = store.os.fstat(fd).st_size
            return
        real(fd)

    monkeypatch.setattr(store.os, "fsync", fsync)
    # the writer's first commit takes whatever is waiting: slow its rows down so that there is a second
    monkeypatch.setattr(store, "_row_text", _slow(store._row_text))
    message = _stopped(tmp_path, _options(tmp_path))
    result, kept = _kept(tmp_path)
    assert kept >= 1
    assert message == (f"writing {result} failed (RuntimeError: the controller went away), run stopped; {kept} "
                       "finished session(s) are safe on disk: rerun the same command to resume")
    _failed_with(tmp_path, f"writing {result} failed (RuntimeError: the controller went away)")


def test_a_writer_callback_that_raises_fails_the_store_instead_of_killing_its_thread(tmp_path: Path) -> None:
    from wtb_local.run.record.store import ResultStore

    store = ResultStore(tmp_path / "result.jsonl")
    store.open(fresh=True)
    heard: list[Any] = []

    def durable(error: BaseException | None) -> None:
        raise ValueError("callback broke")

    store.submit({"id": "wild_tool_bench_0", "result": []}, durable)
    with pytest.raises(RecordError, match=r"result\.jsonl failed \(ValueError: callback broke\)"):
        store.wait()
    with pytest.raises(RecordError):  # later rows hear of it at once, they are never left waiting
        store.submit({"id": "wild_tool_bench_1", "result": []}, heard.append)
    assert list(store.rows) == ["wild_tool_bench_0"]  # written before its callback ran


def _runner(tmp_path: Path, **callbacks: Any) -> Any:
    from wtb_local.benchmark.evaluator.episode import session_episodes, session_result
    from wtb_local.contract.schema import SamplingConfig
    from wtb_local.engines.oracle import OracleBackend
    from wtb_local.formats.parsers import get_parser
    from wtb_local.run.loop.loop import SessionRunner
    from wtb_local.run.loop.progress import Progress, ProgressStats
    from wtb_local.run.loop.steps import StepDriver
    from wtb_local.run.record.store import ResultStore

    parser = get_parser("hermes")
    store = ResultStore(tmp_path / "result.jsonl")
    store.open(fresh=True)
    driver = StepDriver(OracleBackend("Qwen/Qwen2.5-7B-Instruct", parser="hermes"), sampling=SamplingConfig(),
                        parser=parser)
    return SessionRunner(driver, store, model_name="m", progress=Progress(ProgressStats(8, 32)),
                         episodes_for=callbacks.pop("episodes_for", session_episodes),
                         session_row=session_result, **callbacks)


@pytest.mark.parametrize("scheduling", ["continuous", "waves"])
def test_an_on_finished_hook_that_raises_stops_the_loop(tmp_path: Path, scheduling: str) -> None:
    from wtb_local.benchmark.dataset import load_dataset

    seen: list[str] = []
    runner = _runner(tmp_path, on_finished=_third_call_raises(lambda _sid: None, seen, lambda sid: sid))
    with pytest.raises(LoopError) as info:
        asyncio.run(asyncio.wait_for(runner.run(load_dataset("sample", quiet=True), scheduling), BOUND_S))
    [session] = seen
    assert str(info.value) == f"on_finished({session}): ValueError: boom"


def test_making_the_episodes_that_raises_stops_the_loop(tmp_path: Path) -> None:
    from wtb_local.benchmark.dataset import load_dataset
    from wtb_local.benchmark.evaluator.episode import session_episodes

    seen: list[str] = []
    runner = _runner(tmp_path, episodes_for=_third_call_raises(session_episodes, seen, lambda session: session.id))
    with pytest.raises(LoopError) as info:
        asyncio.run(asyncio.wait_for(runner.run(load_dataset("sample", quiet=True), "continuous"), BOUND_S))
    assert str(info.value) == f"making the episodes of {seen[0]}: ValueError: boom"


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from tests.helpers import build_tiny_tokenizer

    templates = ROOT / "tests" / "fixtures" / "rendering" / "chat_templates.json"
    template = json.loads(templates.read_text(encoding="utf-8"))["Qwen/Qwen3-0.6B"]["chat_template"]
    return build_tiny_tokenizer(tmp_path_factory.mktemp("tokenizer") / "tokenizer", template,
                                special_tokens=["<tool_call>", "</tool_call>"], vocab_size=1024,
                                max_position_embeddings=1 << 17)


@pytest.mark.parametrize("callback", ["_read", "_write"])
def test_an_error_in_a_render_pool_loop_callback_stops_the_run(tmp_path: Path, tokenizer_dir: Path,
                                                                monkeypatch: pytest.MonkeyPatch, callback: str) -> None:
    """The pool's reader (replies) and writer (requests) run as event-loop callbacks, where an exception
    would only be logged: every request waiting on that worker, and every later one, fails instead."""
    from wtb_local.formats.rendering.pool import RenderPool

    real = getattr(RenderPool, callback)
    calls = [0]

    def broken(self: RenderPool, worker: Any) -> None:
        calls[0] += 1
        if calls[0] == 20:
            raise ValueError("boom")
        real(self, worker)

    monkeypatch.setattr(RenderPool, callback, broken)
    options = RunOptions(backend="instant", model=str(tokenizer_dir), parser="hermes", dataset="sample",
                         out=str(tmp_path), progress="none", render_workers="1")
    message = _stopped(tmp_path, options)
    result = tmp_path / "result" / "tokenizer" / "Wild-Tool-Bench_result.jsonl"
    kept = len(complete_rows(result))
    doing = "reading its reply" if callback == "_read" else "sending it a request"
    failure = f"PoolCallbackError: render worker 0: {doing} failed (ValueError: boom)"
    assert message == (f"the render workers failed, run stopped ({failure}); {kept} finished session(s) kept in "
                       f"{result}: rerun the same command to resume")
    _failed_with(tmp_path, failure)
