"""A fake OpenAI-compatible text-completions server on loopback, for end-to-end runs without a model.

Replies are canned and chosen by a sha256 of the prompt, so a rerun gets the same text for the same
prompt (a prompt sent as token ids is decoded with the model directory's tokenizer.json first): plain text, a hermes tool call, a call with unreadable arguments (kept, with parse errors), an
unreadable call (a step error), or an HTTP 400 saying the prompt is too long (a step error). Prompts
containing one of `hold_markers` wait until `release` is set (to kill a client while some sessions are
unfinished). Prompts containing one of `fault_markers` meet the machine fault `fault` (after their hold):
"500" (every attempt answered 500), "500 once" (each such prompt's first attempt only), "reset" (the
connection reset without an answer) or "stall" (never answered). With `vary_by_seed`, the request's seed
enters the choice too: a sampling server whose replies differ between seeds (repeats).
"""

from __future__ import annotations

import hashlib
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.helpers.loopback import JSONHandler, LoopbackServer

CANNED = (
    ("text", "Sure, I can help with that."),
    ("call", '<tool_call>\n{"name": "lookup_anything", "arguments": {"query": "weather"}}\n</tool_call>'),
    ("partial", '<tool_call>\n{"name": "lookup_anything", "arguments": {"query": </tool_call>'),
    ("broken", "<tool_call>\nthis is not json\n</tool_call>"),
    ("text", "Here is what I found."),
    ("http400", ""),
)


def canned_reply(prompt: str, seed: Any = None) -> tuple[str, str]:
    text = prompt if seed is None else f"{seed}/{prompt}"
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return CANNED[digest[0] % len(CANNED)]


class FakeServer:
    def __init__(self, model: str, *, vary_by_seed: bool = False) -> None:
        self.model = model
        self.vary_by_seed = vary_by_seed
        self._tokenizer: Any = None
        self.hold_markers: list[str] = []
        self.release = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.fault: str | None = None
        self.fault_markers: list[str] = []
        self.faulted: list[str] = []  # the prompts answered with a fault, once per answer
        self.stop_stalling = threading.Event()  # set when the server shuts down
        self._lock = threading.Lock()
        self.httpd = LoopbackServer(self._handler())

    def prompt_text(self, prompt: Any) -> str:
        """The prompt as text: token ids are decoded exactly (special tokens kept)."""
        if isinstance(prompt, str):
            return prompt
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            self._tokenizer = Tokenizer.from_file(str(Path(self.model) / "tokenizer.json"))
        return str(self._tokenizer.decode(list(prompt), skip_special_tokens=False))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(JSONHandler):
            def do_GET(self) -> None:
                if self.path.endswith("/models"):
                    self.send_json({"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self.send_json({"error": {"message": "not found"}}, 404)

            def do_POST(self) -> None:
                body = self.read_json()
                with server._lock:
                    server.requests.append(body)
                    prompt = server.prompt_text(body.get("prompt", ""))
                if any(marker in prompt for marker in server.hold_markers):
                    server.release.wait(timeout=120)
                if server.fault and any(marker in prompt for marker in server.fault_markers) and \
                        server.answer_fault(self, prompt):
                    return
                kind, text = canned_reply(prompt, body.get("seed") if server.vary_by_seed else None)
                if kind == "http400":  # vLLM's words for a prompt longer than the context window
                    self.send_json({"error": {"message": "This model's maximum context length is 8192 tokens. "
                                                          "However, your prompt contains 9000 input tokens."}}, 400)
                    return
                self.send_json({"id": "cmpl-1", "object": "text_completion", "model": server.model,
                                "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
                                "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4,
                                          "total_tokens": 0}})

        return Handler

    def answer_fault(self, handler: JSONHandler, prompt: str) -> bool:
        """Answer with the machine fault; False when this attempt is to be served ("500 once")."""
        with self._lock:
            if self.fault == "500 once" and prompt in self.faulted:
                return False
            self.faulted.append(prompt)
        if self.fault in ("500", "500 once"):
            handler.send_json({"error": {"message": "canned server error"}}, 500)
        elif self.fault == "reset":  # close with SO_LINGER 0: the client reads a TCP reset
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.connection.close()
        elif self.fault == "stall":
            self.stop_stalling.wait(timeout=300)
        else:
            raise ValueError(f"unknown fault {self.fault!r}")
        handler.close_connection = True
        return True


@contextmanager
def fake_openai_server(model: str, *, vary_by_seed: bool = False) -> Iterator[FakeServer]:
    server = FakeServer(model, vary_by_seed=vary_by_seed)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.stop_stalling.set()
        server.httpd.shutdown()
        server.httpd.server_close()
        thread.join(timeout=10)
