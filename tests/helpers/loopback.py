"""A threaded HTTP server on loopback for the tests' fake OpenAI servers: each run sends every episode's request
at once, so the accept backlog is far above socketserver's default of 5, which overflows on a loaded machine
(the client then meets refused or reset connects, faults no test planted)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JSONHandler(BaseHTTPRequestHandler):
    """A quiet handler that reads and answers JSON bodies."""

    def log_message(self, *args: Any) -> None:  # keep test output clean
        return

    def read_json(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

    def send_json(self, payload: Any, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except OSError:  # the client was killed while this request was held
            pass


class LoopbackServer(ThreadingHTTPServer):
    request_queue_size = 256
    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)

    @property
    def base_url(self) -> str:
        """The server's OpenAI-style base URL (`/v1`)."""
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[LoopbackServer]:
    """The server answering on a thread until the block ends."""
    httpd = LoopbackServer(handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
