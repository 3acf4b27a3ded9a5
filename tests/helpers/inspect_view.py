"""Inspect's own log viewer (`inspect view`) on the loopback, for the export tests and the docs screenshot
(scripts/inspect_view_screenshot.py): start it on a free port over a log folder, open one sample in headless
Chromium (tests/helpers/devtools.py), stop it."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def inspect_viewer(log_dir: str | Path, timeout: float = 180.0) -> Iterator[str]:
    """`inspect view --log-dir DIR` on 127.0.0.1 and a free port; yields its URL; stopped on exit."""
    inspect = shutil.which("inspect", path=os.path.dirname(sys.executable)) or "inspect"
    port = _free_port()
    process = subprocess.Popen([inspect, "view", "--log-dir", str(Path(log_dir).resolve()), "--host", "127.0.0.1",
                                "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/logs", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None:
                raise OSError(f"inspect view stopped: {process.stderr.read().decode()[-500:] if process.stderr else ''}")
            if time.monotonic() > deadline:
                raise OSError(f"inspect view did not answer in {timeout:.0f} s")
            time.sleep(0.5)
        yield url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def sample_url(viewer: str, log_file: str, sample_id: str, epoch: int = 1) -> str:
    """The viewer's page of one sample (its messages tab)."""
    return f"{viewer}/#/logs/{quote(log_file)}/samples/sample/{quote(sample_id)}/{epoch}/"
