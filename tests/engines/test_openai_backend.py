"""The OpenAI-compatible backend against a fake completions server on loopback."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.engines.helpers import make_request
from wtb_local.contract.faults import BadResponse, ServerError, Timeout
from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.engines import get_backend
from wtb_local.engines.config import OpenAIConfig
from wtb_local.engines.openai_server import OpenAIBackend

MAX_REQUESTS = 200  # the fake server refuses to serve more: a runaway retry loop fails the test


class FakeServer:
    """Scripted behaviour per prompt; records bodies, headers and the peak number of requests in flight."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.peak = 0
        self.failures: dict[str, list[int]] = {}  # prompt -> statuses to answer first, in order
        self.messages: dict[str, str] = {}  # prompt -> the error message of its failures
        self.delay_s = 0.0
        self.listing: list[dict[str, Any]] = [{"id": "tiny"}]
        self.lock = threading.Lock()

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        with self.lock:
            if len(self.bodies) >= MAX_REQUESTS:
                handler.send_error(429, "fake server: request budget exhausted")
                return
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        handler.counted = True  # in flight until its answer is written (see _leave)
        try:
            self._answer(handler)
        finally:
            self._leave(handler)

    def _leave(self, handler: BaseHTTPRequestHandler) -> None:
        """A request leaves the count before its answer is written: once the client has read the answer it may
        send the next one, maybe before this handler's thread runs again, which is no excess of the limit."""
        with self.lock:
            if getattr(handler, "counted", False):
                handler.counted = False
                self.in_flight -= 1

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        if handler.command == "GET":
            self._send(handler, 200, {"object": "list", "data": self.listing})
            return
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        with self.lock:
            self.bodies.append(body)
            self.headers.append(dict(handler.headers))
            pending = self.failures.get(str(body["prompt"]), [])
            status = pending.pop(0) if pending else 200
        time.sleep(self.delay_s)
        prompt = str(body["prompt"])
        if status == 200:
            if prompt == "bad json":
                self._send_raw(handler, 200, b"<html>not json</html>")
            elif prompt == "no choices":
                self._send(handler, 200, {"choices": []})
            else:
                finish = "length" if prompt.startswith("long") else "stop"
                self._send(handler, 200, {
                    "choices": [{"index": 0, "text": f"<tool_call>echo {prompt}", "finish_reason": finish}],
                    "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 7, "total_tokens": 0},
                })
        elif status == -1:  # drop the connection without an answer
            handler.close_connection = True
            handler.connection.shutdown(2)
        else:
            message = self.messages.get(prompt, f"scripted failure {status}")
            self._send(handler, status, {"error": {"message": message, "code": status}})

    def _send(self, handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
        self._send_raw(handler, status, json.dumps(payload).encode())

    def _send_raw(self, handler: BaseHTTPRequestHandler, status: int, raw: bytes) -> None:
        self._leave(handler)
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)


@pytest.fixture()
def server() -> Iterator[tuple[FakeServer, str]]:
    fake = FakeServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fake.handle(self)

        def do_POST(self) -> None:
            fake.handle(self)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _serve(requests: list[GenerationRequest], **settings: Any) -> tuple[list[Any], OpenAIBackend]:
    """Each request's Completion, or the fault it raised."""
    # generation_config given: the fake model "tiny" has no files to read it from.
    backend = OpenAIBackend(OpenAIConfig(**{"model": "tiny", "retry_backoff_s": 0.01, "generation_config": {},
                                            **settings}))

    async def main() -> list[Any]:
        await backend.start()
        try:
            return list(await asyncio.gather(*(backend.generate(r) for r in requests), return_exceptions=True))
        finally:
            await backend.close()

    return asyncio.run(main()), backend


def test_request_shape_and_usage(server: tuple[FakeServer, str]) -> None:
    fake, url = server
    request = make_request(3, prompt="hello there", max_new_tokens=64, temperature=0.5, seed=77)
    plain = make_request(4, prompt="long plain", max_new_tokens=32)
    out, backend = _serve([request, plain], base_url=url, api_key="sk-test")
    assert out[0].text == "<tool_call>echo hello there" and out[0].finish_reason == "stop"
    assert (out[0].prompt_tokens, out[0].completion_tokens, out[0].error) == (2, 7, None)
    assert out[1].finish_reason == "length"
    bodies = sorted(fake.bodies, key=lambda b: -b["seed"])
    # No token ids in these requests: the text goes out, with nothing added by the server. The sampling
    # is always explicit: a temperature samples with transformers' defaults (top_k 50) over an empty
    # generation_config; none is greedy.
    assert bodies[0] == {"model": "tiny", "prompt": "hello there", "add_special_tokens": False,
                         "max_tokens": 64, "seed": 77, "temperature": 0.5, "top_p": 1.0, "top_k": 50,
                         "min_p": 0.0, "repetition_penalty": 1.0,
                         "skip_special_tokens": False, "spaces_between_special_tokens": False}
    assert bodies[1] == {"model": "tiny", "prompt": "long plain", "add_special_tokens": False,
                         "max_tokens": 32, "seed": 4, "temperature": 0.0, "top_p": 1.0, "top_k": -1,
                         "min_p": 0.0, "repetition_penalty": 1.0,
                         "skip_special_tokens": False, "spaces_between_special_tokens": False}
    assert all(h["Authorization"] == "Bearer sk-test" for h in fake.headers)
    info = backend.describe()
    assert info["server_models"] == ["tiny"] and info["settings"]["api_key_set"] is True
    assert "sk-test" not in json.dumps(info)


QWEN_GENERATION = {"do_sample": True, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05}


@pytest.mark.parametrize("prompt_format", ["token-ids", "text"])
def test_prompt_format_and_checkpoint_sampling(server: tuple[FakeServer, str], prompt_format: str) -> None:
    fake, url = server
    request = make_request(5, prompt="hello there", prompt_token_ids=[7, 8, 9], seed=11)
    _serve([request], base_url=url, prompt_format=prompt_format, generation_config=QWEN_GENERATION)
    prompt: dict[str, Any] = ({"prompt": [7, 8, 9]} if prompt_format == "token-ids"
                              else {"prompt": "hello there", "add_special_tokens": False})
    assert fake.bodies == [{"model": "tiny", **prompt, "max_tokens": 16, "seed": 11, "temperature": 0.7,
                            "top_p": 0.8, "top_k": 20, "min_p": 0.0, "repetition_penalty": 1.05,
                            "skip_special_tokens": False, "spaces_between_special_tokens": False}]


def test_context_window_from_the_server_listing(server: tuple[FakeServer, str]) -> None:
    fake, url = server
    fake.listing = [{"id": "other", "max_model_len": 4096}, {"id": "tiny", "max_model_len": 24}]
    requests = [make_request(0, prompt="", prompt_token_ids=list(range(30))),
                make_request(1, prompt="", prompt_token_ids=list(range(20)))]
    out, backend = _serve(requests, base_url=url)
    assert out[0].error == "prompt too long: 30 tokens > max_model_len 24"
    assert [b["max_tokens"] for b in fake.bodies] == [4]
    assert backend.describe()["max_model_len"] == 24


def test_generation_config_read_from_the_model_directory(server: tuple[FakeServer, str],
                                                         tmp_path: Any) -> None:
    fake, url = server
    (tmp_path / "generation_config.json").write_text(json.dumps({"do_sample": False, "temperature": 0.6}))
    # --model names the checkpoint directory; the server serves it as "tiny"
    backend = OpenAIBackend(OpenAIConfig(model=str(tmp_path), served_model_name="tiny", base_url=url))

    async def main() -> Completion:
        await backend.start()
        try:
            return await backend.generate(make_request(0, prompt="hi", prompt_token_ids=[1, 2]))
        finally:
            await backend.close()

    assert asyncio.run(main()).error is None
    assert {k: fake.bodies[0][k] for k in ("temperature", "top_p", "top_k")} == {
        "temperature": 0.0, "top_p": 1.0, "top_k": -1}  # do_sample false: greedy, as transformers would
    (tmp_path / "generation_config.json").write_text("{not json")
    broken = OpenAIBackend(OpenAIConfig(model=str(tmp_path), served_model_name="tiny", base_url=url))
    with pytest.raises(RuntimeError, match=r"generation_config.json: unreadable generation_config.json"):
        asyncio.run(broken.start())


def test_concurrency_limit_honoured(server: tuple[FakeServer, str]) -> None:
    fake, url = server
    fake.delay_s = 0.05
    out, _ = _serve([make_request(i, prompt=f"p{i}") for i in range(12)], base_url=url, max_concurrency=3)
    assert all(c.error is None for c in out)
    assert fake.peak == 3


def test_retries_then_success_and_bounded_give_up(server: tuple[FakeServer, str]) -> None:
    """5xx and dropped connections are retried (a seeded request sent again asks for the same reply), each
    retried fault counted; after the last attempt the fault is raised, never turned into a step's error."""
    fake, url = server
    fake.failures = {"flaky": [503, -1, 502], "down": [500] * 10}
    out, backend = _serve([make_request(0, prompt="flaky"), make_request(1, prompt="down")], base_url=url,
                          max_retries=3)
    assert isinstance(out[0], Completion) and out[0].error is None and out[0].text == "<tool_call>echo flaky"
    assert isinstance(out[1], ServerError) and out[1].kind == "server_error"
    assert str(out[1]) == "HTTP 500 from /completions: scripted failure 500 (gave up after 4 attempts)"
    assert sum(b["prompt"] == "down" for b in fake.bodies) == 4
    # flaky: 3 retried faults, then answered; down: 3 retried faults before the one raised
    assert dict(backend.fault_log.met) == {"connection_failed": 1, "server_error": 5}
    assert backend.fault_log.recovered == 1


def test_a_prompt_too_long_is_the_steps_error(server: tuple[FakeServer, str]) -> None:
    """Too long for the known window: not sent; too long by the server's own word (a 400 saying so): the
    step's error, not retried. Other prompts get max_tokens capped to the window."""
    fake, url = server
    fake.failures = {"too long": [400]}
    fake.messages = {"too long": "This model's maximum context length is 32 tokens. However, your prompt "
                                 "contains 40 input tokens."}
    requests = [make_request(0, prompt="too long"), make_request(1, prompt="", prompt_token_ids=list(range(40))),
                make_request(2, prompt="", prompt_token_ids=list(range(20)), max_new_tokens=512)]
    out, _ = _serve(requests, base_url=url, max_model_len=32)
    assert out[0].error == ("prompt too long: HTTP 400 from /completions: This model's maximum context length is "
                            "32 tokens. However, your prompt contains 40 input tokens.")
    assert out[1].error == "prompt too long: 40 tokens > max_model_len 32"
    assert out[2].error is None
    sent = {json.dumps(b["prompt"]): b for b in fake.bodies}
    assert sent[json.dumps(list(range(20)))]["max_tokens"] == 12  # capped to the known window
    assert all(c.finish_reason == "error" for c in out[:2])
    assert sum(b["prompt"] == "too long" for b in fake.bodies) == 1  # 4xx is not retried


def test_what_the_server_does_wrong_is_a_fault_and_not_retried(server: tuple[FakeServer, str]) -> None:
    """A 4xx that is not about the prompt's length (a request this run built wrong), an answer that is no
    completion and a timeout stop the run as faults (docs/reliability.md); none is sent twice."""
    fake, url = server
    fake.failures = {"bad request": [400]}
    requests = [make_request(0, prompt="bad request"), make_request(1, prompt="bad json"),
                make_request(2, prompt="no choices")]
    out, backend = _serve(requests, base_url=url)
    assert [(type(f).__name__, f.kind, str(f)) for f in out[:2]] == [
        ("RequestRejected", "request_rejected", "HTTP 400 from /completions: scripted failure 400"),
        ("BadResponse", "bad_response", "bad response from /completions: not JSON: <html>not json</html>")]
    assert isinstance(out[2], BadResponse) and str(out[2]).startswith("bad response from /completions: no choices")
    assert sorted(b["prompt"] for b in fake.bodies) == ["bad json", "bad request", "no choices"]
    assert not backend.fault_log.met  # nothing was retried

    fake.bodies.clear()
    fake.delay_s = 1.0
    out, backend = _serve([make_request(3, prompt="slow")], base_url=url, timeout_s=0.3)
    assert isinstance(out[0], Timeout) and str(out[0]) == "no answer from /completions within 0.3 s"
    assert len(fake.bodies) == 1


def test_unreachable_server_fails_at_start() -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = get_backend("openai", base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1,
                          retry_backoff_s=0.01)
    with pytest.raises(RuntimeError, match=r"is not usable: connection error on /models"):
        asyncio.run(backend.start())
