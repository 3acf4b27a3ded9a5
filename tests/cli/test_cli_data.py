"""`python -m wtb_local data ...`: fetch, verify, stats."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from wtb_local.benchmark.dataset.blob import git_blob_sha1
from wtb_local.benchmark.dataset.fetch import RELEASE_FILE_NAME
from wtb_local.cli import cli
from wtb_local.contract.resources import sample_dataset_path

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dataset"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An empty cache, offline: no test may reach the network."""
    for var in ("WTB_OFFLINE", "HF_HUB_OFFLINE", "WTB_DATASET_URL", "WTB_DATASET_SHA1"):
        monkeypatch.delenv(var, raising=False)
    return {"WTB_CACHE_DIR": str(tmp_path / "cache"), "WTB_OFFLINE": "1"}


def _invoke(args: list[str], env: dict[str, str]):
    return CliRunner().invoke(cli, args, env=env, catch_exceptions=False)


def _release_sized(tmp_path: Path) -> Path:
    """256 sessions / 1,024 tasks: the 64 vector sessions four times, renumbered."""
    with gzip.open(FIXTURES / "vectors_dataset.jsonl.gz", "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    path = tmp_path / "release_sized.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for n in range(256):
            row = dict(rows[n % 64], id=f"wild_tool_bench_{n}")
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def test_stats_sample_json(env: dict[str, str]) -> None:
    result = _invoke(["data", "stats", "sample", "--json"], env)
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["path"] == str(sample_dataset_path())
    assert (stats["sessions"], stats["tasks"]) == (8, 32)
    assert (
        sum(
            stats["task_types"][t]
            for t in (
                "Single-Tool",
                "Parallel Multi-Tool",
                "Sequential Multi-Tool",
                "Mixed Multi-Tool",
                "Clarify",
                "Chat",
            )
        )
        == 32
    )
    assert stats["task_types"]["Multi-Tool"] == 15
    assert stats["turn_subtypes"] == {
        "First Turn": 8,
        "Coreferential Reference": 8,
        "Partial Information": 8,
        "Long-Range Dependency": 8,
    }
    assert stats["task_positions"] == {"1": 8, "2": 8, "3": 8, "4": 8}
    assert stats["ask_nodes"] == 5 and stats["prepare_nodes"] == 32
    assert stats["gold_nodes"] == stats["tool_call_nodes"] + stats["ask_nodes"] + stats["prepare_nodes"]
    assert stats["max_parallel_width"] == 2 and stats["tasks_with_parallel_steps"] == 9
    assert stats["max_depth"] == 3


def test_stats_text(env: dict[str, str]) -> None:
    result = _invoke(["data", "stats", "sample"], env)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == str(sample_dataset_path())
    assert lines[1].split() == ["sessions", "8"]
    assert "tasks by turn subtype:" in lines
    assert any(line.split() == ["max", "parallel", "width", "2"] for line in lines)


def test_stats_release_sized_prints_paper_counts(tmp_path: Path, env: dict[str, str]) -> None:
    result = _invoke(["data", "stats", str(_release_sized(tmp_path)), "--json"], env)
    stats = json.loads(result.stdout)
    assert (stats["sessions"], stats["tasks"]) == (256, 1024)
    assert stats["task_positions"] == {"1": 256, "2": 256, "3": 256, "4": 256}
    assert stats["turn_subtypes"]["First Turn"] == 256


def test_stats_of_an_unavailable_release_is_an_error_not_the_sample(env: dict[str, str]) -> None:
    result = _invoke(["data", "stats", "--json"], env)
    assert result.exit_code == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert "the release dataset is not cached and could not be fetched" in lines[0]
    assert "`python -m wtb_local data fetch`" in lines[0] and "`--dataset sample`" in lines[0]
    # short: why, and the two commands; the by-hand instructions are `data fetch`'s to give
    assert "To place the file by hand" not in lines[0] and len(lines[0].split(": ", 2)[2]) < 300, lines[0]
    assert json.loads(_invoke(["data", "stats", "sample", "--json"], env).stdout)["path"] == str(
        sample_dataset_path())


def test_stats_bad_path(tmp_path: Path, env: dict[str, str]) -> None:
    result = _invoke(["data", "stats", str(tmp_path / "none.jsonl")], env)
    assert result.exit_code == 1
    assert "no such file" in result.stderr


def test_verify_reports_mismatch_then_validates(env: dict[str, str]) -> None:
    path = str(sample_dataset_path())
    result = _invoke(["data", "verify", path], env)
    assert result.exit_code == 1
    assert "git blob sha1: MISMATCH, expected e91dd1c50a2a9ee8661a8564e11cbd6cd61f795a, got " in result.stdout
    assert "schema: valid (8 sessions, 32 tasks, 0 warnings)" in result.stdout
    assert "not the pinned release file" in result.stderr
    assert _invoke(["data", "verify", path, "--schema-only"], env).exit_code == 0


def test_verify_match(env: dict[str, str]) -> None:
    path = sample_dataset_path()
    result = _invoke(["data", "verify", str(path), "--sha1", git_blob_sha1(path.read_bytes())], env)
    assert result.exit_code == 0
    assert "(matches the pinned release)" in result.stdout


def test_verify_invalid_file(tmp_path: Path, env: dict[str, str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "wild_tool_bench_3"}\n', encoding="utf-8")
    result = _invoke(["data", "verify", str(bad), "--schema-only"], env)
    assert result.exit_code == 1
    assert (
        f"invalid dataset: {bad}:1: wild_tool_bench_3: id: expected 'wild_tool_bench_0' here" in result.stderr
    )
    missing = _invoke(["data", "verify", str(tmp_path / "none.jsonl")], env)
    assert missing.exit_code == 1 and "cannot read" in missing.stderr


class _Handler(BaseHTTPRequestHandler):
    payload = b'{"x": 1}\n'

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.payload)))
        self.end_headers()
        self.wfile.write(self.payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/x.jsonl"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


def test_fetch_from_local_server(url: str, env: dict[str, str]) -> None:
    online = {**env, "WTB_OFFLINE": "0"}
    sha1 = git_blob_sha1(_Handler.payload)
    result = _invoke(["data", "fetch", "--url", url, "--sha1", sha1, "--timeout", "5"], online)
    assert result.exit_code == 0, result.output
    dest = Path(env["WTB_CACHE_DIR"]) / RELEASE_FILE_NAME
    assert result.stdout.strip() == f"{dest} (git blob sha1 {sha1})"
    assert dest.read_bytes() == _Handler.payload
    refused = _invoke(["data", "fetch", "--url", url, "--sha1", "2" * 40, "--force"], online)
    assert refused.exit_code == 1
    assert f"expected {'2' * 40}, got {sha1}" in refused.stderr
    assert dest.read_bytes() == _Handler.payload


def test_fetch_offline(env: dict[str, str]) -> None:
    result = _invoke(["data", "fetch"], env)
    assert result.exit_code == 1
    assert "offline mode" in result.stderr and "python -m wtb_local data verify" in result.stderr


def test_module_entry_point(env: dict[str, str]) -> None:
    """Through `python -m wtb_local`, as users run it."""
    proc = subprocess.run(
        [sys.executable, "-m", "wtb_local", "data", "stats", "sample", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["sessions"] == 8
