"""An exception anywhere in our own per-step code is an internal error with its kind and place
(docs/reliability.md, "Internal errors"), never the backend's fault: turning a parse into the reply, building
the oracle's gold reply, annotating the judged step, metering throughput, and the run's own parser raising
inside format-deviation detection. Each is injected into a real `run` (the oracle backend on the embedded
sample): exit 3, the one line naming kind and place, the kind counted in the manifest, the session's
completions kept, and the fixed rerun reusing them to the files of a run that never met the error."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.run.conftest import METRIC_NAME, RESULT_NAME, SCORE_NAME, invoke, read_jsonl, without_timing

MODEL_DIR = "oracle"
CRASHED = ("wild_tool_bench_2", 1, 0)  # session, task, step


def _args(out: Path, *extra: str) -> list[str]:
    return ["--backend", "oracle", "--parser", "hermes", "--dataset", "sample", "--out", str(out),
            "--progress", "none", *extra]


def _files(out: Path) -> dict[str, Any]:
    return {"result": without_timing(read_jsonl(out / "result" / MODEL_DIR / RESULT_NAME)),
            "score": without_timing(read_jsonl(out / "score" / MODEL_DIR / SCORE_NAME)),
            "metric": json.loads((out / "score" / MODEL_DIR / METRIC_NAME).read_text(encoding="utf-8"))}


def _manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def _boom() -> None:
    raise KeyError("injected")


BOOM_AT = f"test_step_internal_errors.py:{_boom.__code__.co_firstlineno + 1} in _boom"


def _episode_calling() -> tuple[str, int, int] | None:
    """(session, task, step) of the step being accepted, read from the step driver's or the session loop's
    frame (the meter and the progress display are told no episode; the episode has moved on by then)."""
    frame = sys._getframe(2)
    while frame is not None:
        episode, step, at = frame.f_locals.get("episode"), frame.f_locals.get("step"), frame.f_locals.get("at")
        if episode is not None and isinstance(step, int):
            return episode.session_id, episode.task_idx, step
        if isinstance(at, tuple):  # the session loop's name for it
            return at
        frame = frame.f_back
    return None


def _inject(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The crash of `kind` at CRASHED's step."""
    if kind == "reply":
        from wtb_local.run.loop import steps

        reply_from_parse = steps.reply_from_parse

        def crashing_reply(result: Any, rid: str, id_style: str = "openai") -> Any:
            if rid == "/".join(map(str, CRASHED)):
                _boom()
            return reply_from_parse(result, rid, id_style)

        monkeypatch.setattr(steps, "reply_from_parse", crashing_reply)
    elif kind == "gold_reply":
        from wtb_local.benchmark.evaluator import gold_replies

        gold_reply = gold_replies.gold_reply

        def crashing_gold(episode: Any) -> Any:
            if (episode.session_id, episode.task_idx, episode.step) == CRASHED:
                _boom()
            return gold_reply(episode)

        monkeypatch.setattr(gold_replies, "gold_reply", crashing_gold)
    elif kind == "annotation":
        from wtb_local.benchmark.evaluator.episode import Episode

        annotate = Episode.annotate

        def crashing_annotate(self: Any, step: int, fields: Any) -> None:
            if (self.session_id, self.task_idx, step) == CRASHED:
                _boom()
            annotate(self, step, fields)

        monkeypatch.setattr(Episode, "annotate", crashing_annotate)
    elif kind == "throughput":
        from wtb_local.run.loop.throughput import ThroughputMeter

        step = ThroughputMeter.step

        def crashing_meter(self: Any, **fields: Any) -> None:
            if _episode_calling() == CRASHED:
                _boom()
            step(self, **fields)

        monkeypatch.setattr(ThroughputMeter, "step", crashing_meter)
    elif kind == "step":  # counting the step for the progress display (the session loop's own step code)
        from wtb_local.run.loop.progress import Progress

        count = Progress.step

        def crashing_count(self: Any, prompt_tokens: int, completion_tokens: int) -> None:
            if _episode_calling() == CRASHED:
                _boom()
            count(self, prompt_tokens, completion_tokens)

        monkeypatch.setattr(Progress, "step", crashing_count)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "run"
    assert invoke(_args(out)).exit_code == 0
    return out


@pytest.mark.parametrize(("kind", "crashed_step_kept"), [
    ("reply", True), ("gold_reply", False), ("annotation", True), ("throughput", True), ("step", True)])
def test_an_exception_in_our_step_code_is_an_internal_error_with_its_place_and_the_rerun_reuses_the_completions(
        clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, crashed_step_kept: bool) -> None:
    _inject(kind, monkeypatch)
    out = tmp_path / "run"
    failed = invoke(_args(out))
    assert failed.exit_code == 3, failed.stderr
    session, task, step = CRASHED
    assert failed.stderr.strip().splitlines()[-1] == (
        f"Error: internal error ({kind}): KeyError: 'injected' at {BOOM_AT} (session {session}, task {task}, step "
        f"{step}); 1 step(s) met an error of wtb_local's own code ({kind} 1) and none was scored; 1 session(s) "
        f"left unfinished, their completions kept in {out / 'internal_errors.jsonl'}; 7 finished session(s) kept in "
        f"{out / 'result' / MODEL_DIR / RESULT_NAME}: report it with the run's manifest.json; once it is fixed, "
        "rerun the same command to finish them")
    invocation = _manifest(out)["invocations"][-1]
    assert (invocation["status"], invocation["internal_errors"], invocation["sessions_run"]) == (
        "failed", {kind: 1}, 7)
    assert invocation["failure"] == f"internal error ({kind}): KeyError: 'injected' at {BOOM_AT}"
    [row] = read_jsonl(out / "internal_errors.jsonl")
    kept = [c["request_id"] for c in row["completions"]]
    assert row["id"] == session and row["error"] == {"kind": kind, "detail": "KeyError: 'injected'",
                                                     "where": BOOM_AT, "task": task, "step": step}
    assert ("/".join(map(str, CRASHED)) in kept) is crashed_step_kept
    assert len(kept) >= 2

    monkeypatch.undo()  # the bug fixed
    fixed = invoke(_args(out))
    assert fixed.exit_code == 0, fixed.stderr
    invocation = _manifest(out)["invocations"][-1]
    assert (invocation["completions_reused"], invocation["internal_errors"], invocation["sessions_run"]) == (
        len(kept), {}, 1)
    assert _files(out) == _files(clean)


def test_the_run_parsers_own_crash_in_deviation_detection_is_an_internal_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hermes's `format` raising for the probe call deviation detection renders (and only there: the oracle
    writes its replies with it too): every parse of the run is an internal error of kind parser, not a
    detection run silently without the parser's own format."""
    from wtb_local.formats.parsers import deviations
    from wtb_local.formats.parsers.hermes import HermesParser

    deviations.shapes()  # the registry's shapes learnt before the bug (kept for the process)
    format_ = HermesParser.format

    def crashing(self: Any, content: Any, tool_calls: Any, reasoning: Any = None) -> str:
        if any(call.name == "wtb_probe_call" for call in tool_calls):
            _boom()
        return format_(self, content, tool_calls, reasoning)

    reference = tmp_path / "reference"
    assert invoke(_args(reference, "--limit", "1")).exit_code == 0
    monkeypatch.setattr(HermesParser, "format", crashing)
    out = tmp_path / "run"
    failed = invoke(_args(out, "--limit", "1"))
    assert failed.exit_code == 3, failed.stderr
    assert failed.stderr.strip().splitlines()[-1].startswith(
        f"Error: internal error (parser): KeyError: 'injected' at {BOOM_AT} (session wild_tool_bench_0, task 0, "
        "step 0); ")
    counts = _manifest(out)["invocations"][-1]["internal_errors"]
    [row] = read_jsonl(out / "internal_errors.jsonl")
    assert list(counts) == ["parser"] and counts["parser"] == len(row["completions"]) >= 1

    monkeypatch.undo()
    fixed = invoke(_args(out, "--limit", "1"))
    assert fixed.exit_code == 0, fixed.stderr
    assert _manifest(out)["invocations"][-1]["completions_reused"] == len(row["completions"])
    assert _files(out) == _files(reference)
