"""The probe of an MLflow tracking server (analysis/exports/tracker.py) without the export extra: one plain
HTTP request, bounded by a few seconds, whose every refusal is one line naming the URI with its credentials
masked and what to do (docs/exports.md, "Trackers that fail fast"). Servers here are stand-ins on the
loopback answering as MLflow's REST API does, or as something else does; the real MLflow server is in
test_mlflow_export.py."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from wtb_local.analysis.exports.registry import ExportError
from wtb_local.analysis.exports.tracker import probe_tracker


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def stand_in() -> Iterator[tuple[str, list[dict[str, str]], dict[str, object]]]:
    """A loopback server answering the probe with `answer["status"]`/`answer["body"]`; `seen` holds each
    request's path and Authorization header."""
    seen: list[dict[str, str]] = []
    answer: dict[str, object] = {"status": 404, "body": json.dumps({"error_code": "RESOURCE_DOES_NOT_EXIST"})}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({"path": self.path, "auth": self.headers.get("Authorization", "")})
            if answer.get("stall"):
                time.sleep(float(answer["stall"]))  # type: ignore[arg-type]
            body = str(answer["body"]).encode()
            try:
                self.send_response(int(answer["status"]))  # type: ignore[call-overload]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the probe gave up first (the stall test)
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen, answer
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_nothing_listens_on_is_refused_at_once_in_one_line() -> None:
    uri = f"http://127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    with pytest.raises(ExportError) as refused:
        probe_tracker(uri, "wtb_local")
    assert time.monotonic() - started < 10
    assert str(refused.value) == f"{uri}: connection refused; start the server or correct the URI"


def test_a_host_that_does_not_resolve_is_refused_with_the_uri_masked() -> None:
    with pytest.raises(ExportError) as refused:
        probe_tracker("http://alice:pw-s3cret@no-such-host.invalid:5000/?api_key=k-s3cret", "wtb_local")
    assert str(refused.value) == ("http://alice:***@no-such-host.invalid:5000/?api_key=***: its host name does "
                                  "not resolve; start the server or correct the URI")


def test_an_mlflow_server_passes_and_gets_the_credentials_as_basic_auth(stand_in) -> None:
    uri, seen, answer = stand_in
    probe_tracker(uri.replace("http://", "http://alice:pw@") + "/", "my runs")  # experiment not there yet: 404
    answer.update(status=200, body=json.dumps({"experiment": {"name": "my runs"}}))
    probe_tracker(uri, "my runs")
    assert [s["path"] for s in seen] == ["/api/2.0/mlflow/experiments/get-by-name?experiment_name=my%20runs"] * 2
    assert seen[0]["auth"] == "Basic " + base64.b64encode(b"alice:pw").decode() and seen[1]["auth"] == ""


@pytest.mark.parametrize(("status", "body", "why"), [
    (401, "", ("the server refused the credentials (HTTP 401); give the account's user and password in the URI "
              "or in MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN")),
    (503, "", "the server answered HTTP 503; check the tracking server's log"),
    (404, "<html>not found</html>", ("no MLflow tracking server there (HTTP 404 on its REST API); give the "
                                    "tracking server's address (the URL `mlflow server` prints)")),
])
def test_a_server_that_cannot_take_the_export_is_one_line(stand_in, status: int, body: str, why: str) -> None:
    uri, _, answer = stand_in
    answer.update(status=status, body=body)
    with pytest.raises(ExportError) as refused:
        probe_tracker(uri.replace("http://", "http://bob:pw-s3cret@"), "wtb_local")
    assert str(refused.value) == f"{uri.replace('http://', 'http://bob:***@')}: {why}"


def test_a_server_that_does_not_answer_is_refused_after_the_probe_timeout(stand_in) -> None:
    uri, _, answer = stand_in
    answer.update(stall=3)
    started = time.monotonic()
    with pytest.raises(ExportError) as refused:
        probe_tracker(uri, "wtb_local", timeout=1)
    assert time.monotonic() - started < 3
    assert str(refused.value) == f"{uri}: no answer within 1 s; start the server or correct the URI"
