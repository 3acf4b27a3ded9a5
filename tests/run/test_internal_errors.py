"""An error in wtb_local's own code on a step (a parser, the renderer outside the chat template's code, our
tokenising, the judge) is an internal error (docs/reliability.md, "Internal errors"): never scored as the
model's, counted by kind in the manifest, named in one line at the end of the run with where it was raised,
exit code 3; the session it touched is not written, its completions are kept, and the rerun with the error
fixed reuses them and ends with the files of a run that never met it. Each crash is injected into the real
code path of a real run (the oracle backend on the embedded sample)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.run.conftest import METRIC_NAME, RESULT_NAME, SCORE_NAME, invoke, read_jsonl, without_timing
from wtb_local.engines.oracle import OracleBackend
from wtb_local.run import RunOptions
from wtb_local.run.errors import InternalErrors
from wtb_local.run.job import run_job_async

MODEL_DIR = "oracle"
CRASHED = "wild_tool_bench_2"  # the session whose step is made to crash


def _args(out: Path) -> list[str]:
    return ["--backend", "oracle", "--parser", "hermes", "--dataset", "sample", "--out", str(out),
            "--progress", "none"]


def _files(out: Path, model_dir: str = MODEL_DIR) -> dict[str, Any]:
    return {"result": without_timing(read_jsonl(out / "result" / model_dir / RESULT_NAME)),
            "score": without_timing(read_jsonl(out / "score" / model_dir / SCORE_NAME)),
            "metric": json.loads((out / "score" / model_dir / METRIC_NAME).read_text(encoding="utf-8"))}


def _manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "run"
    done = invoke(_args(out))
    assert done.exit_code == 0, done.stderr
    return out


def _raw(clean: Path, session: str, task: int, step: int) -> str:
    row = next(r for r in read_jsonl(clean / "result" / MODEL_DIR / RESULT_NAME) if r["id"] == session)
    return row["result"][task]["inference_log"][f"step_{step}"]["inference_output"]["raw"]


def _assert_not_scored(out: Path, model_dir: str = MODEL_DIR) -> None:
    """The crashed session has no row in the result or score files, and no step anywhere says a crash."""
    rows = read_jsonl(out / "result" / model_dir / RESULT_NAME)
    assert [r["id"] for r in rows] == [f"wild_tool_bench_{i}" for i in range(8) if i != 2]
    assert "crashed" not in (out / "result" / model_dir / RESULT_NAME).read_text(encoding="utf-8")
    assert len(read_jsonl(out / "score" / model_dir / SCORE_NAME)) == 7


def test_a_parser_crash_ends_the_run_with_code_3_and_the_fixed_rerun_reuses_the_completions(
        clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wtb_local.formats.parsers.hermes import HermesParser

    target = _raw(clean, CRASHED, 1, 0)
    parse = HermesParser.parse

    def crashing(self: Any, text: str, **kwargs: Any) -> Any:
        if text == target and kwargs.get("tools") is not None:
            raise KeyError("injected")
        return parse(self, text, **kwargs)

    monkeypatch.setattr(HermesParser, "parse", crashing)
    out = tmp_path / "run"
    done = invoke(_args(out))
    assert done.exit_code == 3
    result = out / "result" / MODEL_DIR / RESULT_NAME
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == (
        f"Error: internal error (parser): KeyError: 'injected' at test_internal_errors.py:"
        f"{crashing.__code__.co_firstlineno + 2} in crashing (session {CRASHED}, task 1, step 0); 1 step(s) met "
        f"an error of wtb_local's own code (parser 1) and none was scored; 1 session(s) left unfinished, their "
        f"completions kept in {out / 'internal_errors.jsonl'}; 7 finished session(s) kept in {result}: report "
        "it with the run's manifest.json; once it is fixed, rerun the same command to finish them")
    _assert_not_scored(out)
    manifest = _manifest(out)
    invocation = manifest["invocations"][-1]
    assert (manifest["status"], invocation["status"]) == ("failed", "failed")
    assert invocation["failure"].startswith("internal error (parser): KeyError: 'injected' at ")
    assert (invocation["internal_errors"], invocation["sessions_run"], invocation["sessions_scheduled"]) == (
        {"parser": 1}, 7, 8)
    [kept] = read_jsonl(out / "internal_errors.jsonl")
    assert kept["id"] == CRASHED and kept["error"]["kind"] == "parser" and (kept["error"]["task"],
                                                                               kept["error"]["step"]) == (1, 0)
    crashed_step = [c for c in kept["completions"] if c["request_id"] == f"{CRASHED}/1/0"]
    assert crashed_step == [{**crashed_step[0], "text": target, "reply": None}]

    monkeypatch.setattr(HermesParser, "parse", parse)  # the bug fixed
    rerun = invoke(_args(out))
    assert rerun.exit_code == 0, rerun.stderr
    invocation = _manifest(out)["invocations"][-1]
    # every completion the session got before the crash, and the crashed step's, sent back, not generated
    assert invocation["completions_reused"] == len(kept["completions"]) > 1
    assert (invocation["internal_errors"], invocation["sessions_run"], invocation["status"]) == ({}, 1, "complete")
    assert not (out / "internal_errors.jsonl").exists()
    assert _files(out) == _files(clean)


def test_a_judge_crash_is_an_internal_error(clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wtb_local.benchmark.evaluator.episode import Episode

    judge = Episode._judge_calls

    def crashing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.session_id == CRASHED and self.task_idx == 3:
            raise ZeroDivisionError("injected")
        return judge(self, *args, **kwargs)

    monkeypatch.setattr(Episode, "_judge_calls", crashing)
    out = tmp_path / "run"
    done = invoke(_args(out))
    assert done.exit_code == 3
    assert done.stderr.strip().splitlines()[-1].startswith(
        "Error: internal error (judge): ZeroDivisionError: injected at test_internal_errors.py:")
    _assert_not_scored(out)
    assert _manifest(out)["invocations"][-1]["internal_errors"] == {"judge": 1}
    monkeypatch.setattr(Episode, "_judge_calls", judge)
    assert invoke(_args(out)).exit_code == 0
    assert _files(out) == _files(clean)


class _NeedsPrompt(OracleBackend):
    needs_prompt = True


class _Renderer:
    """Renders every prompt; `fail` (render or encode) raises a plain Python error for one session's
    prompts, as a bug in wtb_local's renderer or tokenising wrapper would (not the template's own code)."""

    choice = None

    def __init__(self, marker: str, fail: str) -> None:
        self.marker, self.fail = marker, fail

    def _hit(self, messages: list[dict[str, Any]]) -> bool:
        return any(m.get("content") == self.marker for m in messages)

    def render_text(self, messages: list[dict[str, Any]], tools: Any, **_: Any) -> str:
        if self.fail == "render" and self._hit(messages):
            raise AttributeError("'NoneType' object has no attribute 'items'")
        return "PROMPT " + self.marker if self._hit(messages) else "prompt"

    def encode_prompt(self, text: str, key: Any = None, family: Any = None) -> list[int]:
        if self.fail == "encode" and text.endswith(self.marker):
            raise IndexError("list index out of range")
        return [1, 2, 3]


@pytest.mark.parametrize(("fail", "kind", "error"), [
    ("render", "renderer", "AttributeError: 'NoneType' object has no attribute 'items'"),
    ("encode", "tokenizer", "IndexError: list index out of range")])
def test_a_renderer_or_tokeniser_bug_is_an_internal_error_not_a_render_failure(
        tmp_path: Path, fail: str, kind: str, error: str) -> None:
    from wtb_local.benchmark.dataset import load_dataset

    marker = load_dataset("sample")[2].english_tasks[0]  # in every prompt of session 2's tasks
    out = tmp_path / "run"
    options = RunOptions(backend="oracle", model="Qwen/Qwen2.5-7B-Instruct", parser="hermes", dataset="sample",
                         out=str(out), progress="none")
    backend = _NeedsPrompt("Qwen/Qwen2.5-7B-Instruct", parser="hermes")
    with pytest.raises(InternalErrors) as raised:
        asyncio.run(run_job_async(options, backend=backend, renderer=_Renderer(marker, fail)))
    assert raised.value.exit_code == 3
    assert str(raised.value).startswith(f"internal error ({kind}): {error} at test_internal_errors.py:")
    assert f"(session {CRASHED}, task 0, step 0)" in str(raised.value)
    model_dir = "Qwen_Qwen2.5-7B-Instruct"
    _assert_not_scored(out, model_dir)
    manifest = _manifest(out)
    # every task of the session met it: the first stops the session, the others are counted as they meet it
    counts = manifest["invocations"][-1]["internal_errors"]
    assert list(counts) == [kind] and 1 <= counts[kind] <= 4
    assert "render failed" not in (out / "result" / model_dir / RESULT_NAME).read_text(encoding="utf-8")
