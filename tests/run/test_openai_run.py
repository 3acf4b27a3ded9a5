"""The OpenAI backend end to end against a fake loopback server, and resume after SIGKILL / SIGTERM
(SLURM preemption) mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.run.conftest import RESULT_NAME, invoke, read_jsonl, run_files, without_timing
from tests.run.fake_openai import fake_openai_server


def _args(model_dir: Path, base_url: str, out: Path, *extra: str) -> list[str]:
    return [
        "--backend",
        "openai",
        "--base-url",
        base_url,
        "--model",
        str(model_dir),
        "--model-name",
        "fake",
        "--dataset",
        "sample",
        "--out",
        str(out),
        "--progress",
        "none",
        *extra,
    ]


def _steps(rows: list[dict]) -> list[dict]:
    return [
        step["inference_output"]
        for row in rows
        for task in row["result"]
        for key, step in task["inference_log"].items()
        if key.startswith("step_")
    ]


def test_openai_backend_end_to_end(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    with fake_openai_server(str(qwen_tiny_dir)) as server:
        first = invoke(_args(qwen_tiny_dir, server.base_url, tmp_path / "a"))
        assert first.exit_code == 0, first.output
        n_requests = len(server.requests)
        second = invoke(_args(qwen_tiny_dir, server.base_url, tmp_path / "b"))
        assert second.exit_code == 0, second.output
    assert len(server.requests) == 2 * n_requests
    a, b = run_files(tmp_path / "a", "fake"), run_files(tmp_path / "b", "fake")
    assert without_timing(a) == without_timing(b)
    tasks = [task for row in a["result"] for task in row["result"]]
    assert len(tasks) == 4 * len(a["result"]) and all(
        t["action_name_label"] in ("correct", "error") for t in tasks
    )
    steps = _steps(a["result"])
    reasons = [s.get("error_reason") or "" for s in steps]
    assert any(r.startswith("parse error: tool call block 1") for r in reasons)  # the unreadable call
    partial = [s for s in steps if s.get("parse_errors") and s.get("tool_calls")]
    # recovered calls are kept and judged (by name: not a candidate here), not turned into parse errors
    assert partial and all(
        s["error_reason"] == "action name not in candidate_answer_function_list" for s in partial
    )
    assert any("HTTP 400" in r for r in reasons)  # a failed request is one step's error, the run goes on
    assert any(s.get("tool_calls") for s in steps)
    called = [c for s in steps for c in s.get("tool_calls") or []]
    assert all(c["id"].startswith("call_") and len(c["id"]) == 29 for c in called)  # deterministic ids
    assert all("raw" in s and "finish_reason" in s for s in steps)
    request = server.requests[0]
    assert request["skip_special_tokens"] is False and request["max_tokens"] == 512
    # The renderer's token ids are the prompt, and the sampling is the checkpoint's generation_config
    # (tiny_model.py writes Qwen2.5's) resolved as the in-process backends resolve it: nothing is left to
    # the server's own defaults.
    assert all(isinstance(i, int) for i in request["prompt"]) and "add_special_tokens" not in request
    assert server.prompt_text(request["prompt"]).startswith("<|im_start|>system")
    sampling = {k: request[k] for k in ("temperature", "top_p", "top_k", "min_p", "repetition_penalty")}
    assert sampling == {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.0, "repetition_penalty": 1.05}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_resume_after_a_kill_gives_the_same_files(qwen_tiny_dir: Path, tmp_path: Path, sig: int) -> None:
    from wtb_local.benchmark.dataset import load_dataset

    sessions = load_dataset("sample")
    markers = [s.english_tasks[0] for s in sessions[2:]]  # every prompt of a session carries its first task
    assert not any(m in s.english_tasks[0] for m in markers for s in sessions[:2])
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    with fake_openai_server(str(qwen_tiny_dir)) as server:
        server.hold_markers = markers
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        cmd = [sys.executable, "-m", "wtb_local", *_args(qwen_tiny_dir, server.base_url, killed)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        result_file = killed / "result" / "fake" / RESULT_NAME
        deadline = time.monotonic() + 180
        try:
            while time.monotonic() < deadline and proc.poll() is None:
                if result_file.exists() and len(read_jsonl(result_file)) >= 2:
                    break
                time.sleep(0.1)
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            os.kill(proc.pid, sig)
            if sig == signal.SIGTERM:  # handled like Ctrl-C: a clean stop that says how to resume
                server.release.set()  # let requests held by the fake server return so the loop can stop
                assert proc.wait(timeout=60) == 130
                assert "rerun the same command to resume" in proc.stderr.read().decode()
                manifest = json.loads((killed / "manifest.json").read_text())
                assert manifest["status"] == "interrupted"
                server.release.clear()
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
        assert [r["id"] for r in read_jsonl(result_file)] == ["wild_tool_bench_0", "wild_tool_bench_1"]
        server.hold_markers = []
        server.release.set()
        resumed = invoke(_args(qwen_tiny_dir, server.base_url, killed))
        assert resumed.exit_code == 0, resumed.output
        assert f"2 finished session(s) skipped, {len(sessions) - 2} to run" in resumed.output
        assert invoke(_args(qwen_tiny_dir, server.base_url, clean)).exit_code == 0
    assert without_timing(run_files(killed, "fake")) == without_timing(run_files(clean, "fake"))


def test_text_prompts_on_request_and_recorded(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    """`WTB_SERVER_PROMPT=text` (the --server-prompt twin) through the real command: the rendered text goes
    out with add_special_tokens false; the choice is part of the run configuration."""
    out = tmp_path / "text"
    with fake_openai_server(str(qwen_tiny_dir)) as server:
        env = {**os.environ, "WTB_SERVER_PROMPT": "text"}
        cmd = [sys.executable, "-m", "wtb_local", *_args(qwen_tiny_dir, server.base_url, out, "--limit", "1")]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert server.requests and all(
            isinstance(r["prompt"], str) and r["prompt"].startswith("<|im_start|>system")
            and r["add_special_tokens"] is False for r in server.requests)
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["config"]["server_prompt"] == "text"
        switched = invoke(_args(qwen_tiny_dir, server.base_url, out, "--limit", "1", "--server-prompt",
                                "token-ids"))
    assert switched.exit_code != 0
    assert 'server_prompt: "text" -> "token-ids"' in switched.output
