"""Kept completions survive every rerun (docs/reliability.md, "Internal errors"): whatever the run that met an
internal error finished (one session of `--limit 1`, `--sessions`, a one-session shard, no session at all
because every one crashed), the fixed rerun sends back what was kept (`completions_reused` counts them) and
the manifest keeps the whole history of invocations, the failed one included; a run interrupted before its
first session finished keeps its invocation too. `--backend openai-chat` keeps the server's parsed replies as
they came, like every backend. Each rerun ends with the files of a run that never met the error."""

from __future__ import annotations

import hashlib
import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.loopback import JSONHandler, serving
from tests.run.conftest import METRIC_NAME, RESULT_NAME, SCORE_NAME, invoke, read_jsonl, without_timing

MODEL_DIR = "oracle"


def _args(out: Path, *extra: str) -> list[str]:
    return ["--backend", "oracle", "--parser", "hermes", "--dataset", "sample", "--out", str(out),
            "--progress", "none", *extra]


def _files(folder: Path, model_dir: str = MODEL_DIR) -> dict[str, Any]:
    return {"result": without_timing(read_jsonl(folder / "result" / model_dir / RESULT_NAME)),
            "score": without_timing(read_jsonl(folder / "score" / model_dir / SCORE_NAME)),
            "metric": json.loads((folder / "score" / model_dir / METRIC_NAME).read_text(encoding="utf-8"))}


def _manifest(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def _history(folder: Path) -> list[tuple[Any, ...]]:
    return [(i["status"], i["sessions_run"], i["internal_errors"], i["completions_reused"])
            for i in _manifest(folder)["invocations"]]


def _kept(folder: Path) -> dict[str, int]:
    return {row["id"]: len(row["completions"]) for row in read_jsonl(folder / "internal_errors.jsonl")}


def _crash_parser(monkeypatch: pytest.MonkeyPatch, hit: Any) -> Any:
    """The hermes parser raising KeyError('injected') on the completions `hit(text)` picks; returns the
    original to put back (the bug fixed)."""
    from wtb_local.formats.parsers.hermes import HermesParser

    parse = HermesParser.parse

    def crashing(self: Any, text: str, **kwargs: Any) -> Any:
        if kwargs.get("tools") is not None and hit(text):
            raise KeyError("injected")
        return parse(self, text, **kwargs)

    monkeypatch.setattr(HermesParser, "parse", crashing)
    return parse


def _raw(folder: Path, session: str, task: int, step: int, model_dir: str = MODEL_DIR) -> str:
    row = next(r for r in read_jsonl(folder / "result" / model_dir / RESULT_NAME) if r["id"] == session)
    return row["result"][task]["inference_log"][f"step_{step}"]["inference_output"]["raw"]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean") / "run"
    assert invoke(_args(out)).exit_code == 0
    return out


@pytest.mark.parametrize(("extra", "session", "where"), [
    (("--limit", "1"), "wild_tool_bench_0", ""),
    (("--sessions", "3"), "wild_tool_bench_3", ""),
    (("--shard", "5/8"), None, "shards/5-of-8")],  # one Slurm array task of eight
    ids=["limit", "sessions", "shard"])
def test_a_one_session_run_hit_by_an_internal_error_reuses_its_completions_and_keeps_its_history(
        clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: tuple[str, ...], session: str | None,
        where: str) -> None:
    if session is None:  # the shard's one session, by the plan every array task computes
        from wtb_local.benchmark.dataset import load_dataset
        from wtb_local.run.setup.shards import plan_shards

        [session] = plan_shards(load_dataset("sample"), 8)[5]
    target = _raw(clean, session, 1, 0)
    parse = _crash_parser(monkeypatch, lambda text: text == target)
    out = tmp_path / "run"
    folder = out / where if where else out
    failed = invoke(_args(out, *extra))
    assert failed.exit_code == 3
    assert f"(session {session}, task 1, step 0); 1 step(s) met an error of wtb_local's own code (parser 1)" in (
        failed.stderr.strip().splitlines()[-1])
    kept = _kept(folder)
    [row] = read_jsonl(folder / "internal_errors.jsonl")
    # what the session got before the crash (the tasks that stepped before it) and the crashed step's own
    assert list(kept) == [session] and f"{session}/1/0" in [c["request_id"] for c in row["completions"]]
    assert kept[session] >= 2
    assert _history(folder) == [("failed", 0, {"parser": 1}, 0)]

    monkeypatch.setattr("wtb_local.formats.parsers.hermes.HermesParser.parse", parse)  # the bug fixed
    fixed = invoke(_args(out, *extra))
    assert fixed.exit_code == 0, fixed.stderr
    assert _history(folder) == [("failed", 0, {"parser": 1}, 0), ("complete", 1, {}, kept[session])]
    assert not (folder / "internal_errors.jsonl").exists()
    reference = tmp_path / "reference"
    assert invoke(_args(reference, *extra)).exit_code == 0
    assert _files(folder) == _files(reference / where if where else reference)


def test_a_run_whose_every_session_crashed_is_finished_by_the_fixed_rerun_from_what_it_kept(
        clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Task 2's first completion of every session crashes the parser: no session is written at all."""
    targets = {_raw(clean, f"wild_tool_bench_{i}", 2, 0) for i in range(8)}
    parse = _crash_parser(monkeypatch, lambda text: text in targets)
    out = tmp_path / "run"
    assert invoke(_args(out)).exit_code == 3
    assert read_jsonl(out / "result" / MODEL_DIR / RESULT_NAME) == []
    kept = _kept(out)
    assert list(kept) == [f"wild_tool_bench_{i}" for i in range(8)]
    assert _history(out) == [("failed", 0, {"parser": 8}, 0)]

    monkeypatch.setattr("wtb_local.formats.parsers.hermes.HermesParser.parse", parse)
    assert invoke(_args(out)).exit_code == 0
    assert _history(out) == [("failed", 0, {"parser": 8}, 0), ("complete", 8, {}, sum(kept.values()))]
    assert _files(out) == _files(clean)


def test_a_run_interrupted_before_its_first_session_finished_keeps_its_invocation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGINT at the first step (the run's own handler takes it; `run_job` in process, as the command would
    leave the process at once): nothing written, the record `interrupted`; the rerun resumes the same record
    instead of starting a new one."""
    from wtb_local.formats.parsers.hermes import HermesParser
    from wtb_local.run import RunOptions
    from wtb_local.run.job import run_job
    from wtb_local.run.loop.stopping import RunInterrupted

    parse = HermesParser.parse
    sent = []

    def interrupting(self: Any, text: str, **kwargs: Any) -> Any:
        if not sent:
            sent.append(True)
            signal.raise_signal(signal.SIGINT)
        return parse(self, text, **kwargs)

    monkeypatch.setattr(HermesParser, "parse", interrupting)
    out = tmp_path / "run"
    with pytest.raises(RunInterrupted):
        run_job(RunOptions(backend="oracle", parser="hermes", dataset="sample", out=str(out), progress="none",
                           limit=1))
    assert read_jsonl(out / "result" / MODEL_DIR / RESULT_NAME) == []
    monkeypatch.setattr(HermesParser, "parse", parse)
    assert invoke(_args(out, "--limit", "1")).exit_code == 0
    assert [(i["status"], i["sessions_run"]) for i in _manifest(out)["invocations"]] == [
        ("interrupted", 0), ("complete", 1)]


def test_a_changed_configuration_with_nothing_finished_still_starts_afresh(
        clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = _raw(clean, "wild_tool_bench_0", 1, 0)
    parse = _crash_parser(monkeypatch, lambda text: text == target)
    out = tmp_path / "run"
    assert invoke(_args(out, "--limit", "1")).exit_code == 3
    monkeypatch.setattr("wtb_local.formats.parsers.hermes.HermesParser.parse", parse)
    changed = invoke(_args(out, "--limit", "1", "--seed", "7"))
    assert changed.exit_code == 0, changed.stderr
    assert _history(out) == [("complete", 1, {}, 0)]  # the other configuration's completions are not sent
    assert not (out / "internal_errors.jsonl").exists()


# --- openai-chat ---------------------------------------------------------------------------------------------


@contextmanager
def _chat_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A chat server whose reply depends on the conversation only (a rerun gets the same one): a call of the
    step's first tool or a text answer, by a sha256 of the messages."""
    bodies: list[dict[str, Any]] = []

    class Handler(JSONHandler):
        def do_GET(self) -> None:
            self.send_json({"object": "list", "data": [{"id": "served-model"}]})

        def do_POST(self) -> None:
            body = self.read_json()
            bodies.append(body)
            digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).digest()
            tools = body.get("tools") or []
            if digest[0] % 2 and tools:
                name = tools[0]["function"]["name"]
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"call-{digest.hex()[:8]}", "type": "function",
                     "function": {"name": name, "arguments": "{}"}}]}
            else:
                message = {"role": "assistant", "content": f"answer {digest.hex()[:6]}"}
            self.send_json({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 50, "completion_tokens": 5}})

    with serving(Handler) as httpd:
        yield httpd.base_url, bodies


def test_openai_chat_keeps_the_servers_replies_and_the_fixed_rerun_sends_them_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wtb_local.benchmark.evaluator.episode import Episode

    judge = Episode.accept

    def crashing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.task_idx == 1:
            raise ZeroDivisionError("injected")
        return judge(self, *args, **kwargs)

    with _chat_server() as (url, bodies):
        def chat(out: Path) -> Any:
            return invoke(["--backend", "openai-chat", "--base-url", url, "--model", "served-model", "--dataset",
                           "sample", "--limit", "1", "--out", str(out), "--progress", "none"])

        reference = tmp_path / "reference"
        assert chat(reference).exit_code == 0
        steps = len(bodies)
        monkeypatch.setattr(Episode, "accept", crashing)
        out = tmp_path / "run"
        bodies.clear()
        failed = chat(out)
        assert failed.exit_code == 3
        assert failed.stderr.strip().splitlines()[-1].startswith(
            "Error: internal error (judge): ZeroDivisionError: injected at test_kept_completions.py:")
        [row] = read_jsonl(out / "internal_errors.jsonl")
        sent = len(bodies)
        assert len(row["completions"]) == sent  # every request's reply kept, the crashed step's included
        # as the server gave it: the message whole, the call ids already the run's own
        first = row["completions"][0]["reply"]
        assert set(first) == {"content", "reasoning_content", "tool_calls", "server_message"}
        assert first["server_message"]["role"] == "assistant"

        monkeypatch.setattr(Episode, "accept", judge)
        bodies.clear()
        fixed = chat(out)
        assert fixed.exit_code == 0, fixed.stderr
        assert len(bodies) == steps - sent  # only the steps never generated are asked of the server
    model_dir = "served-model"
    assert _history(out) == [("failed", 0, {"judge": 1}, 0), ("complete", 1, {}, sent)]
    assert _files(out, model_dir) == _files(reference, model_dir)
