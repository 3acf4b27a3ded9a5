"""`python -m wtb_local.engines.ray_wait`, the multi-node template's wait for its Ray cluster: its usage and its
one-line failures (the two-node success path runs in test_multinode.py)."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _wait(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "wtb_local.engines.ray_wait", *args], capture_output=True, text=True,
                          env=env, timeout=60, check=False)


def test_usage() -> None:
    done = _wait("127.0.0.1:1")
    assert (done.returncode, done.stderr) == (2, "usage: python -m wtb_local.engines.ray_wait HEAD_IP:PORT NODES [TIMEOUT_S]\n")


def test_no_head_is_one_line_after_the_timeout() -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray not installed")
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = _wait(f"127.0.0.1:{port}", "2", "1")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"ray_wait: no Ray head at 127.0.0.1:{port} after 1 s\n")
