"""Fetching the pinned release: blob hashing, a loopback HTTP server, refusals, offline mode."""

from __future__ import annotations

import socket
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

import pytest

from wtb_local.benchmark.dataset import fetch as fetch_module
from wtb_local.benchmark.dataset.blob import file_blob_sha1, git_blob_sha1
from wtb_local.benchmark.dataset.fetch import (
    RELEASE_BLOB_SHA1,
    RELEASE_FILE_NAME,
    RELEASE_URL,
    FetchError,
    cache_dir,
    fetch_release,
    release_path,
)

PAYLOAD = b'{"id": "wild_tool_bench_0", "note": "not the real release"}\n'


class _Server:
    def __init__(self) -> None:
        self.requests: list[str] = []
        self.payload = PAYLOAD
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests.append(self.path)
                if self.path != "/release.jsonl":
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(owner.payload)))
                self.end_headers()
                self.wfile.write(owner.payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/release.jsonl"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def server() -> Iterator[_Server]:
    with _Server() as srv:
        yield srv


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("WTB_CACHE_DIR", str(folder))
    for var in ("WTB_OFFLINE", "HF_HUB_OFFLINE", "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(var, raising=False)
    return folder


def test_git_blob_sha1_matches_git() -> None:
    # `printf 'hello\n' | git hash-object --stdin` and the empty blob
    assert git_blob_sha1(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    assert git_blob_sha1(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def test_file_blob_sha1(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(PAYLOAD * 5000)  # several read chunks
    assert file_blob_sha1(path) == git_blob_sha1(PAYLOAD * 5000)


def test_pinned_release() -> None:
    assert RELEASE_URL == (
        "https://raw.githubusercontent.com/yupeijei1997/WildToolBench/80a5f427fb26c9a14eb419ccb565675671650065/"
        "wild-tool-bench/data/Wild-Tool-Bench.jsonl"
    )
    assert RELEASE_BLOB_SHA1 == "e91dd1c50a2a9ee8661a8564e11cbd6cd61f795a"


def test_cache_dir_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WTB_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "wtb_local"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "wtb_local"
    monkeypatch.setenv("WTB_CACHE_DIR", str(tmp_path / "explicit"))
    assert release_path() == tmp_path / "explicit" / RELEASE_FILE_NAME


def test_fetch_downloads_verifies_and_caches(server: _Server, cache: Path) -> None:
    expected = git_blob_sha1(PAYLOAD)
    path = fetch_release(url=server.url, expected_sha1=expected, timeout=5)
    assert path == cache / RELEASE_FILE_NAME
    assert path.read_bytes() == PAYLOAD
    # no temporary left; the stamp remembers the verdict for later uses
    assert sorted(p.name for p in cache.iterdir()) == [f".{RELEASE_FILE_NAME}.verified", RELEASE_FILE_NAME]
    assert fetch_release(url=server.url, expected_sha1=expected, timeout=5) == path
    assert len(server.requests) == 1  # a verified file is kept
    fetch_release(url=server.url, expected_sha1=expected, timeout=5, force=True)
    assert len(server.requests) == 2


def test_corrupt_cached_file_is_replaced(server: _Server, cache: Path) -> None:
    cache.mkdir()
    (cache / RELEASE_FILE_NAME).write_bytes(b"truncated")
    path = fetch_release(url=server.url, expected_sha1=git_blob_sha1(PAYLOAD), timeout=5)
    assert path.read_bytes() == PAYLOAD
    assert len(server.requests) == 1


def test_hash_mismatch_is_refused_and_leaves_nothing(server: _Server, cache: Path) -> None:
    wrong = "0" * 40
    with pytest.raises(FetchError) as info:
        fetch_release(url=server.url, expected_sha1=wrong, timeout=5)
    message = str(info.value)
    assert f"expected {wrong}, got {git_blob_sha1(PAYLOAD)}" in message
    assert "nothing was written" in message
    assert not cache.exists() or list(cache.iterdir()) == []


def test_hash_mismatch_keeps_a_previous_file(server: _Server, cache: Path) -> None:
    cache.mkdir()
    previous = cache / RELEASE_FILE_NAME
    previous.write_bytes(b"old")
    with pytest.raises(FetchError):
        fetch_release(url=server.url, expected_sha1="1" * 40, timeout=5, force=True)
    assert previous.read_bytes() == b"old"
    assert [p.name for p in cache.iterdir()] == [RELEASE_FILE_NAME]


def _manual_steps_in(message: str, url: str, dest: Path) -> bool:
    return url in message and str(dest) in message and f"python -m wtb_local data verify {dest}" in message


def test_server_down_gives_manual_instructions(cache: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/release.jsonl"
    with pytest.raises(FetchError) as info:
        fetch_release(url=url, expected_sha1="0" * 40, timeout=5)
    message = str(info.value)
    assert message.startswith(f"could not download {url}: ")
    assert _manual_steps_in(message, url, cache / RELEASE_FILE_NAME)
    assert not cache.exists()


def test_http_error_gives_manual_instructions(server: _Server, cache: Path) -> None:
    url = server.url.replace("release.jsonl", "missing.jsonl")
    with pytest.raises(FetchError, match="HTTP 404") as info:
        fetch_release(url=url, expected_sha1="0" * 40, timeout=5)
    assert _manual_steps_in(str(info.value), url, cache / RELEASE_FILE_NAME)


@pytest.mark.parametrize("var", ["WTB_OFFLINE", "HF_HUB_OFFLINE"])
def test_offline_makes_no_network_attempt(var: str, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(var, "1")

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("network attempted while offline")

    monkeypatch.setattr(urllib.request, "urlopen", forbidden)
    monkeypatch.setattr(fetch_module.urllib.request, "urlopen", forbidden)
    with pytest.raises(FetchError) as info:
        fetch_release()
    message = str(info.value)
    assert message.startswith("offline mode")
    assert _manual_steps_in(message, RELEASE_URL, cache / RELEASE_FILE_NAME)


def test_offline_still_accepts_a_verified_file(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WTB_OFFLINE", "1")
    cache.mkdir()
    (cache / RELEASE_FILE_NAME).write_bytes(PAYLOAD)
    assert fetch_release(expected_sha1=git_blob_sha1(PAYLOAD)) == cache / RELEASE_FILE_NAME
