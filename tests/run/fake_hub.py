"""A minimal Hugging Face hub on loopback: one model repository served from a local directory at one
commit, enough for `huggingface_hub` downloads, `transformers` tokenizer/model loading and
`snapshot_download` (HF_ENDPOINT points at it; HF_HOME at a temporary cache). It records every request,
so a test can see what a run downloaded."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class FakeHub:
    def __init__(self, repo_id: str, files: Path, commit: str) -> None:
        self.repo_id, self.files, self.commit = repo_id, files, commit
        self.requests: list[tuple[str, str]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def downloaded(self) -> list[str]:
        """Names of the files whose bytes were fetched (GET), sorted."""
        prefix = f"/{self.repo_id}/resolve/"
        return sorted({path[len(prefix):].split("/", 1)[1] for method, path in self.requests
                       if method == "GET" and path.startswith(prefix)})

    def _names(self) -> list[str]:
        return sorted(str(p.relative_to(self.files)) for p in self.files.rglob("*") if p.is_file())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD" and body:
                    self.wfile.write(body)

            def _not_found(self) -> None:
                self._reply(404, headers={"X-Error-Code": "EntryNotFound"})

            def do_HEAD(self) -> None:
                self._route()

            def do_GET(self) -> None:
                self._route()

            def _route(self) -> None:
                path = self.path.split("?", 1)[0]
                hub.requests.append((self.command, path))
                info = f"/api/models/{hub.repo_id}"
                if path == info or path.startswith(info + "/revision/"):
                    payload = {"id": hub.repo_id, "modelId": hub.repo_id, "sha": hub.commit,
                               "siblings": [{"rfilename": name} for name in hub._names()]}
                    self._reply(200, json.dumps(payload).encode(), {"Content-Type": "application/json"})
                elif path == f"{info}/tree/main" or path == f"{info}/tree/{hub.commit}":
                    entries = [{"type": "file", "path": name, "oid": hashlib.sha1(name.encode()).hexdigest(),
                                "size": (hub.files / name).stat().st_size} for name in hub._names()]
                    self._reply(200, json.dumps(entries).encode(), {"Content-Type": "application/json"})
                elif path.startswith(f"/{hub.repo_id}/resolve/"):
                    name = path[len(f"/{hub.repo_id}/resolve/"):].split("/", 1)[1]
                    file = hub.files / name
                    if not file.is_file():
                        self._not_found()
                        return
                    data = file.read_bytes()
                    self._reply(200, data, {"X-Repo-Commit": hub.commit,
                                            "ETag": f'"{hashlib.sha256(data).hexdigest()}"'})
                else:  # other hub APIs (folders, telemetry) are absent here
                    self._not_found()

        return Handler


@contextmanager
def fake_hub(repo_id: str, files: Path, commit: str = "0123456789abcdef0123456789abcdef01234567") -> Iterator[FakeHub]:
    hub = FakeHub(repo_id, files, commit)
    thread = threading.Thread(target=hub.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        hub.httpd.shutdown()
        hub.httpd.server_close()
        thread.join(timeout=10)
