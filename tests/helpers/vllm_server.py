"""A real `vllm serve` (vLLM's OpenAI server) on loopback, started and stopped by the caller: the server the
real-model tests and `scripts/real_model_figures.py` run `--backend openai` and `--backend openai-chat`
against. Every wait is bounded; the server is always terminated (killed after a grace period)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 600.0
STOP_TIMEOUT_S = 60.0


class ServerError(RuntimeError):
    """The server exited or did not answer in time; the message ends with the tail of its log."""


@dataclass(frozen=True)
class Server:
    base_url: str  # http://127.0.0.1:PORT/v1
    served_model_name: str
    log: Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def vllm_server(model: str, served_model_name: str, args: Sequence[str], log: Path, *,
                env: dict[str, str] | None = None, start_timeout_s: float = START_TIMEOUT_S) -> Iterator[Server]:
    """`vllm serve MODEL --served-model-name NAME ARGS` on a free loopback port, ready when `/v1/models`
    answers."""
    port = free_port()
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--served-model-name",
           served_model_name, "--host", "127.0.0.1", "--port", str(port), *args]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as handle:
        proc = subprocess.Popen(cmd, stdout=handle, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + start_timeout_s
        while not _ready(base_url):
            if proc.poll() is not None:
                raise ServerError(f"vllm serve exited with {proc.returncode}:\n{_tail(log)}")
            if time.monotonic() > deadline:
                raise ServerError(f"vllm serve not ready after {start_timeout_s:.0f} s:\n{_tail(log)}")
            time.sleep(1.0)
        yield Server(base_url, served_model_name, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=STOP_TIMEOUT_S)


def _ready(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(base_url + "/models", timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _tail(log: Path, chars: int = 3000) -> str:
    try:
        return log.read_text(encoding="utf-8", errors="replace")[-chars:]
    except OSError:
        return "(no log)"
