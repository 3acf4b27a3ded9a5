"""The backend fault cases of docs/reliability.md ("Backend faults"), each a real command: `python -m
wtb_local` in a subprocess against a tiny model, a loopback OpenAI-compatible server started here, or the
transformers backend with an out-of-memory error injected into the model's `generate` (sitecustomize.py
on the subprocess's path: nothing in wtb_local knows about it).

Each case asserts the exit code, the one line the run ends with, the manifest's status and fault counts,
and that the same command, run again on a working machine, resumes to results identical to an uninterrupted
run (result and score files, timing fields aside). The vLLM engine killed mid-run is
test_backend_faults_vllm.py; a render worker killed is tests/rendering/test_render_pool.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.run.conftest import RESULT_NAME, chat_template, read_jsonl, run_files, without_timing
from tests.run.fake_openai import fake_openai_server

ROOT = Path(__file__).resolve().parents[2]
FAULTY_SESSION = 5  # its last task meets the fault; the sample's other 7 sessions finish first
RUN_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-weight tiny model with Qwen2.5's chat template (hermes tool calls)."""
    from tests.helpers import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("faults") / "qwen", chat_template("Qwen/Qwen2.5-7B-Instruct"),
                            special_tokens=["<tool_call>", "</tool_call>"], max_position_embeddings=8192)


def _env(*path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, path), str(ROOT)]), "PYTHONUNBUFFERED": "1",
            "HF_HUB_OFFLINE": "1", **extra}


def _wtb(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], capture_output=True, text=True, env=env,
                          timeout=RUN_TIMEOUT_S, check=False)


def _manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def _marker() -> str:
    """Text only the prompts of one task carry: the faulty session's last task (a task's prompts hold the
    session's earlier tasks, never its later ones)."""
    from wtb_local.benchmark.dataset import load_dataset

    sessions = load_dataset("sample")
    marker = sessions[FAULTY_SESSION].english_tasks[-1]
    assert all(marker not in task for s in sessions for task in s.english_tasks
               if task is not sessions[FAULTY_SESSION].english_tasks[-1])
    return marker


def _openai_args(model: Path, base_url: str, out: Path, *extra: str) -> list[str]:
    return ["--backend", "openai", "--base-url", base_url, "--model", str(model), "--model-name", "fake",
            "--dataset", "sample", "--out", str(out), "--progress", "none", *extra]


@pytest.fixture(scope="module")
def uninterrupted(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The files of a run against a server that never fails."""
    out = tmp_path_factory.mktemp("uninterrupted") / "run"
    with fake_openai_server(str(tiny)) as server:
        done = _wtb(_openai_args(tiny, server.base_url, out), _env())
    assert done.returncode == 0, done.stderr[-3000:]
    return run_files(out, "fake")


# fault -> (kind, attempts that met it, the line's detail, its advice, run options)
STOPS = {
    "500": ("server_error", 5, "HTTP 500 from /completions: canned server error (gave up after 5 attempts)",
            "check the server's log, then rerun the same command to resume", ()),
    "reset": ("connection_failed", 5,
              "connection error on /completions: [Errno 104] Connection reset by peer (gave up after 5 attempts)",
              "check that the server is up, then rerun the same command to resume", ()),
    "stall": ("timeout", 1, "no answer from /completions within 8 s",
              "check the server (or raise --request-timeout), then rerun the same command to resume",
              ("--request-timeout", "8")),
}


@pytest.mark.parametrize("fault", list(STOPS))
def test_a_server_fault_stops_the_run_in_one_line_and_the_rerun_is_identical(
        tiny: Path, tmp_path: Path, uninterrupted: dict[str, Any], fault: str) -> None:
    """A server that answers 500, resets the connection or stops answering, at one request, after the other
    sessions finished: 500 and resets are retried 4 times with backoff (1+2+4+8 s), a timeout is not. The
    run stops with one line; the session the fault touched is not written; the rerun runs it alone."""
    kind, count, detail, advice, options = STOPS[fault]
    out = tmp_path / "run"
    result_file = out / "result" / "fake" / RESULT_NAME
    marker = _marker()
    with fake_openai_server(str(tiny)) as server:
        server.hold_markers = server.fault_markers = [marker]  # held until the others are written, then faulted
        server.fault = fault
        args = _openai_args(tiny, server.base_url, out, *options)
        proc = subprocess.Popen([sys.executable, "-m", "wtb_local", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=_env())
        try:
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while not (result_file.exists() and len(read_jsonl(result_file)) == 7):
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.05)
            server.release.set()
            _, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        faulted = len(server.faulted)

        assert proc.returncode == 1 and "Traceback" not in stderr, stderr
        kept = [row["id"] for row in read_jsonl(result_file)]
        assert f"wild_tool_bench_{FAULTY_SESSION}" not in kept and len(kept) == 7
        assert stderr.strip().splitlines()[-1] == (
            f"Error: machine fault ({kind}): {detail}; run stopped, 7 finished session(s) kept in {result_file}; "
            f"{advice}")
        assert faulted == count  # every attempt met the fault
        manifest = _manifest(out)
        assert manifest["status"] == "failed"
        invocation = manifest["invocations"][-1]
        assert invocation["failure"] == f"machine fault ({kind}): {detail}"
        assert (invocation["faults"], invocation["faults_recovered"]) == ({kind: count}, 0)

        server.fault = None
        rerun = _wtb(args, _env())
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "resuming" in rerun.stderr and "7 finished session(s) skipped, 1 to run" in rerun.stderr
    assert without_timing(run_files(out, "fake")) == without_timing(uninterrupted)
    manifest = _manifest(out)
    assert manifest["status"] == "complete" and manifest["invocations"][-1]["faults"] == {}


def test_a_server_error_retried_past_is_counted_and_changes_nothing(
        tiny: Path, tmp_path: Path, uninterrupted: dict[str, Any]) -> None:
    """A 500 at the first attempt of each of one task's requests: each is sent again and answered; the run
    completes with the same results, and its manifest counts the faults it got past."""
    out = tmp_path / "run"
    with fake_openai_server(str(tiny)) as server:
        server.fault_markers, server.fault = [_marker()], "500 once"
        done = _wtb(_openai_args(tiny, server.base_url, out), _env())
        faulted = len(server.faulted)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Error" not in done.stderr and faulted >= 1
    invocation = _manifest(out)["invocations"][-1]
    assert (invocation["faults"], invocation["faults_recovered"]) == ({"server_error": faulted}, faulted)
    assert without_timing(run_files(out, "fake")) == without_timing(uninterrupted)


# --- out of memory in the transformers backend ------------------------------------------------------------

# Loaded by the subprocess's interpreter at start (it is first on its path); counts the model's generate calls
# and raises torch's out-of-memory error from the call after WTB_INJECT_OOM_AFTER.
SITECUSTOMIZE = textwrap.dedent('''\
    import os

    if os.environ.get("WTB_INJECT_OOM_AFTER"):
        import torch
        from transformers.generation.utils import GenerationMixin

        _after = int(os.environ["WTB_INJECT_OOM_AFTER"])
        _generate = GenerationMixin.generate
        _calls = [0]

        def generate(self, *args, **kwargs):
            _calls[0] += 1
            if _calls[0] > _after:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB (injected)")
            return _generate(self, *args, **kwargs)

        GenerationMixin.generate = generate
    ''')


def test_out_of_memory_in_the_transformers_backend_stops_the_run_and_the_rerun_is_identical(
        tiny: Path, tmp_path: Path) -> None:
    """One request per wave (`--batch-size 1`), each seeded from its own id, so which requests share a wave
    cannot change a reply: a resumed run must equal an uninterrupted one. Out of memory at the 13th generate
    call: the run stops, the sessions finished before it stay, none is written with the fault in it."""
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")

    def args(out: Path) -> list[str]:
        return ["--backend", "transformers", "--model", str(tiny), "--model-name", "tiny", "--dataset", "sample",
                "--batch-size", "1", "--scheduling", "continuous", "--max-new-tokens", "8", "--out", str(out),
                "--progress", "none"]

    clean = _wtb(args(tmp_path / "clean"), _env())
    assert clean.returncode == 0, clean.stderr[-3000:]
    out = tmp_path / "run"
    result_file = out / "result" / "tiny" / RESULT_NAME
    failed = _wtb(args(out), _env(inject, WTB_INJECT_OOM_AFTER="12"))
    assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
    kept = len(read_jsonl(result_file))
    assert 1 <= kept < 8
    assert failed.stderr.strip().splitlines()[-1] == (
        "Error: machine fault (out_of_memory): OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB "
        f"(injected); run stopped, {kept} finished session(s) kept in {result_file}; rerun the same command with a "
        "smaller --batch-size to resume")
    manifest = _manifest(out)
    assert manifest["status"] == "failed" and manifest["invocations"][-1]["faults"] == {"out_of_memory": 1}
    # no step of the written sessions carries the fault
    assert not any("memory" in json.dumps(row) for row in read_jsonl(result_file))

    rerun = _wtb(args(out), _env(inject))  # the hook is on the path but asked for nothing
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"{kept} finished session(s) skipped, {8 - kept} to run" in rerun.stderr
    assert without_timing(run_files(out, "tiny")) == without_timing(run_files(tmp_path / "clean", "tiny"))
    assert _manifest(out)["status"] == "complete"
