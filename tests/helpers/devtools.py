"""Headless Chromium driven over the DevTools protocol, with the standard library only (a minimal websocket
client): open a page, wait until its text holds what is expected, read the text, take a screenshot. For
pages that load their content after the first paint (Inspect's log viewer fetches and unpacks the log in
the page), which `chromium --dump-dom` and `--screenshot` capture before it arrives."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Self


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _Socket:
    """A websocket client: text frames out (masked, as a client must), text frames in (any length)."""

    def __init__(self, url: str) -> None:
        rest = url.removeprefix("ws://")
        host_port, path = rest.split("/", 1)
        host, port = host_port.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += self.sock.recv(4096)
        if b" 101 " not in reply.split(b"\r\n", 1)[0]:
            raise OSError(f"websocket handshake refused: {reply[:100]!r}")
        self.buffer = reply.split(b"\r\n\r\n", 1)[1]

    def send(self, text: str) -> None:
        data = text.encode()
        mask = os.urandom(4)
        size = len(data)
        head = bytes([0x81]) + (bytes([0x80 | size]) if size < 126 else
                                bytes([0x80 | 126]) + struct.pack(">H", size) if size < 65536 else
                                bytes([0x80 | 127]) + struct.pack(">Q", size))
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, count: int) -> bytes:
        while len(self.buffer) < count:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise OSError("websocket closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def receive(self) -> str:
        message = b""
        while True:
            first, second = self._read(2)
            size = second & 0x7F
            if size == 126:
                size = struct.unpack(">H", self._read(2))[0]
            elif size == 127:
                size = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(size)
            if first & 0x0F in (0x1, 0x0):
                message += payload
                if first & 0x80:
                    return message.decode()

    def close(self) -> None:
        self.sock.close()


class Page:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, width: int = 1400, height: int = 1000) -> None:
        browser = chromium()
        if browser is None:
            raise OSError("chromium is not installed")
        self.profile = tempfile.mkdtemp(prefix="wtb-chromium-")
        self.process = subprocess.Popen(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "--remote-debugging-port=0", "--remote-allow-origins=*",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.is_file() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise OSError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as reply:
            targets = json.loads(reply.read())
        url = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
        self.socket = _Socket(url)
        self.next_id = 0
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.receive())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise OSError(f"{method}: {message['error']}")
                return message.get("result", {})

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def text(self) -> str:
        result = self.call("Runtime.evaluate", expression="document.body ? document.body.innerText : ''",
                           returnByValue=True)
        return str(result.get("result", {}).get("value") or "")

    def wait_for_text(self, needles: list[str], timeout: float = 120.0) -> str:
        """The page's text once it holds every needle; OSError naming the missing ones after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            missing = [needle for needle in needles if needle not in text]
            if not missing:
                return text
            if time.monotonic() > deadline:
                raise OSError(f"the page never showed {missing}; it shows: {' '.join(text.split())[:500]}")
            time.sleep(0.5)

    def screenshot(self, path: str | Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def close(self) -> None:
        if getattr(self, "socket", None) is not None:
            self.socket.close()
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
