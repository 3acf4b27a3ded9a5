"""No secret from `--base-url` or `--api-key` in any output (docs/reliability.md, "Secrets"): real commands
(`run`, `score`, `report`, `explain`) in subprocesses against a loopback server that wants the credentials,
planted in the URL (a user-info password, `api_key` and `access_token` query parameters) and in the
environment twins (WTB_BASE_URL, WTB_API_KEY). The credentials work (the server refuses any request without
them), the failures say so in one masked line, and every output and every file the commands write is
searched for every planted secret."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.run.conftest import RESULT_NAME, read_jsonl
from tests.run.fake_openai import FakeServer

ROOT = Path(__file__).resolve().parents[2]
PASSWORD, QUERY_KEY, QUERY_TOKEN = "pw-5ecret-1", "qk-5ecret-2", "tk-5ecret-3"
WRONG_PASSWORD, ENV_TOKEN, API_KEY = "wrong-5ecret-4", "et-5ecret-5", "ak-5ecret-6"
BASIC = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
PLANTED = (PASSWORD, QUERY_KEY, QUERY_TOKEN, WRONG_PASSWORD, ENV_TOKEN, API_KEY, BASIC,
           base64.b64encode(f"alice:{WRONG_PASSWORD}".encode()).decode())


class GuardedServer(FakeServer):
    """The fake server, answering 401 to any request without the expected Authorization header and query;
    its 400 (a prompt too long) quotes the request's path and query back, as some proxies do."""

    def __init__(self, model: str, *, authorization: str, query: str) -> None:
        self.authorization, self.query = authorization, query
        self.seen: list[tuple[str, str, str | None]] = []
        super().__init__(model)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        base: Any = super()._handler()
        server = self

        class Guarded(base):  # type: ignore[misc, valid-type]
            def _allowed(self) -> bool:
                server.seen.append((self.command, self.path, self.headers.get("Authorization")))
                path, _, query = self.path.partition("?")
                if self.headers.get("Authorization") == server.authorization and query == server.query \
                        and path.startswith("/v1/"):
                    return True
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                base.send_json(self, {"error": {"message": "unauthorized"}}, 401)
                return False

            def send_json(self, payload: Any, status: int = 200) -> None:
                if status == 400:
                    payload["error"]["message"] += f" (request {self.path})"
                base.send_json(self, payload, status)

            def do_GET(self) -> None:
                if self._allowed():
                    base.do_GET(self)

            def do_POST(self) -> None:
                if self._allowed():
                    base.do_POST(self)

        return Guarded


@contextmanager
def guarded_server(model: Path, *, authorization: str, query: str) -> Iterator[GuardedServer]:
    server = GuardedServer(str(model), authorization=authorization, query=query)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
        thread.join(timeout=10)


def _wtb(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("WTB_")}
    environ.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", **env)
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], capture_output=True, text=True,
                          env=environ, timeout=300, check=False)


def _run_args(model: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--backend", "openai", "--model", str(model), "--model-name", "fake", "--dataset", "sample",
            "--out", str(out), *extra]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.timeout(300)  # eight commands in subprocesses, each importing the package afresh
def test_planted_credentials_work_and_appear_in_no_output_and_no_file(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    outputs: list[str] = []

    def wtb(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
        done = _wtb(args, **env)
        outputs.extend((done.stdout, done.stderr))
        return done

    query = f"api_key={QUERY_KEY}&access_token={QUERY_TOKEN}"
    with guarded_server(qwen_tiny_dir, authorization=f"Basic {BASIC}", query=query) as server:
        host = server.base_url.split("//", 1)[1].rsplit("/v1", 1)[0]
        url = f"http://alice:{PASSWORD}@{host}/v1?{query}"
        shown = f"http://alice:***@{host}/v1?api_key=***&access_token=***"
        # in the URL: the password as HTTP Basic, the query on every request
        first = wtb(_run_args(qwen_tiny_dir, tmp_path / "a", "--base-url", url, "--progress", "plain"))
        assert first.returncode == 0, first.stderr[-3000:]
        assert server.seen and all(auth == f"Basic {BASIC}" and path.endswith(f"?{query}")
                                   for _, path, auth in server.seen)
        assert {path.split("?")[0] for _, path, _ in server.seen} == {"/v1/models", "/v1/completions"}
        # the server's 400 quoted the query back: recorded on the step, masked
        reasons = [step["inference_output"].get("error_reason") or ""
                   for row in read_jsonl(tmp_path / "a" / "result" / "fake" / RESULT_NAME)
                   for task in row["result"] for key, step in task["inference_log"].items()
                   if key.startswith("step_")]
        assert any(reason.endswith("(request /v1/completions?api_key=***&access_token=***)") for reason in reasons)
        manifest = json.loads((tmp_path / "a" / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["settings"]["base_url"] == shown

        wrong = wtb(_run_args(qwen_tiny_dir, tmp_path / "wrong", "--base-url",
                              url.replace(PASSWORD, WRONG_PASSWORD)))
        assert wrong.returncode == 1
        assert wrong.stderr.strip().splitlines()[-1] == (
            f"Error: OpenAI server at {shown} refused the request (HTTP 401): pass --api-key (WTB_API_KEY)")

        both = wtb(_run_args(qwen_tiny_dir, tmp_path / "both", "--base-url", url), WTB_API_KEY=API_KEY)
        assert both.returncode == 1
        assert both.stderr.strip().splitlines()[-1] == (
            f"Error: --base-url {shown} carries a password (sent as HTTP Basic) and --api-key (WTB_API_KEY) a key "
            "(sent as a Bearer token): both would be the one Authorization header; pass one of them")

    port = _free_port()  # nothing listens there any more
    down = wtb(_run_args(qwen_tiny_dir, tmp_path / "down", "--base-url", f"http://alice:{PASSWORD}@127.0.0.1:{port}/v1?{query}"))
    assert down.returncode == 1
    assert down.stderr.strip().splitlines()[-1] == (
        f"Error: OpenAI server at http://alice:***@127.0.0.1:{port}/v1?api_key=***&access_token=*** is not usable: "
        "[Errno 111] Connection refused; start it first and wait until it is ready")

    # the environment twins: a Bearer key and a token in the query
    env_query = f"access_token={ENV_TOKEN}"
    with guarded_server(qwen_tiny_dir, authorization=f"Bearer {API_KEY}", query=env_query) as server:
        second = wtb(_run_args(qwen_tiny_dir, tmp_path / "b", "--limit", "2"),
                     WTB_BASE_URL=f"{server.base_url}?{env_query}", WTB_API_KEY=API_KEY)
        assert second.returncode == 0, second.stderr[-3000:]
        assert server.seen and all(auth == f"Bearer {API_KEY}" for _, _, auth in server.seen)

    for args in (["score", str(tmp_path / "a")], ["report", str(tmp_path / "a"), str(tmp_path / "b"),
                                                  "--out", str(tmp_path / "report")],
                 ["explain", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "explain")]):
        done = wtb(args)
        assert done.returncode == 0, (args, done.stderr[-3000:])

    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert len(files) > 20  # the runs, score, summary, report and explanation files
    for secret in PLANTED:
        assert not [text for text in outputs if secret in text], secret
        assert not [path for path in files if secret.encode() in path.read_bytes()], secret
