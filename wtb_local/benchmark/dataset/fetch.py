"""Download and verify the pinned WildToolBench release file (stdlib `urllib` only).

The file is pinned by its git blob SHA-1 at a fixed upstream commit, so a changed or truncated download
is refused before it reaches the cache.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path

from wtb_local.benchmark.dataset.blob import git_blob_sha1
from wtb_local.benchmark.dataset.verified import blob_sha1_cached, remember_sha1
from wtb_local.contract.resources import cache_dir

RELEASE_COMMIT = "80a5f427fb26c9a14eb419ccb565675671650065"
RELEASE_REPO_PATH = "wild-tool-bench/data/Wild-Tool-Bench.jsonl"
RELEASE_URL = (
    f"https://raw.githubusercontent.com/yupeijei1997/WildToolBench/{RELEASE_COMMIT}/{RELEASE_REPO_PATH}"
)
RELEASE_BLOB_SHA1 = "e91dd1c50a2a9ee8661a8564e11cbd6cd61f795a"
RELEASE_FILE_NAME = "Wild-Tool-Bench.jsonl"
DEFAULT_TIMEOUT_S = 60.0
_OFFLINE_VARS = ("WTB_OFFLINE", "HF_HUB_OFFLINE")


class FetchError(RuntimeError):
    """The release file could not be downloaded or did not verify; the message says what to do, `cause`
    says why in a few words (what a run's one-line stop quotes)."""

    def __init__(self, message: str, cause: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause or message


def release_path() -> Path:
    """Where the release file lives once fetched."""
    return cache_dir() / RELEASE_FILE_NAME


def is_offline() -> bool:
    """`WTB_OFFLINE` or `HF_HUB_OFFLINE` set to a true value: never touch the network."""
    return any(os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on") for var in _OFFLINE_VARS)


def manual_instructions(url: str = RELEASE_URL, dest: Path | None = None) -> str:
    dest = dest if dest is not None else release_path()
    return (
        f"To place the file by hand: download {url} on a machine with internet access, copy it to {dest}, "
        f"then check it with `python -m wtb_local data verify {dest}`."
    )


def fetch_release(
    *,
    url: str = RELEASE_URL,
    expected_sha1: str = RELEASE_BLOB_SHA1,
    dest: str | Path | None = None,
    force: bool = False,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> Path:
    """Download the release file into the cache and return its path.

    A file already in place whose blob hash matches is kept (unless `force`). The download goes to a
    temporary file next to the destination and is renamed into place only after its hash matched, so the
    cache never holds a partial or foreign file. Raises `FetchError` (offline, network failure, mismatch)."""
    dest = Path(dest) if dest is not None else release_path()
    if not force and dest.is_file() and blob_sha1_cached(dest) == expected_sha1:
        return dest
    if is_offline():
        offline = f"offline mode ({' or '.join(_OFFLINE_VARS)} is set)"
        raise FetchError(f"{offline}: not downloading the dataset. " + manual_instructions(url, dest), offline)
    data = _download(url, timeout, dest)
    got = git_blob_sha1(data)
    if got != expected_sha1:
        raise FetchError(
            f"downloaded file from {url} does not match the pinned release: git blob sha1 expected "
            f"{expected_sha1}, got {got}; nothing was written. " + manual_instructions(url, dest),
            f"the download is not the pinned release (git blob sha1 {got})")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.partial")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    remember_sha1(dest, got)
    return dest


def _download(url: str, timeout: float, dest: Path) -> bytes:
    # The default opener honours http(s)_proxy / no_proxy from the environment.
    request = urllib.request.Request(url, headers={"User-Agent": "wtb_local"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        raise FetchError(
            f"could not download {url}: HTTP {exc.code} {exc.reason}. " + manual_instructions(url, dest),
            f"download failed: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise FetchError(f"could not download {url}: {reason}. " + manual_instructions(url, dest),
                         f"download failed: {reason}") from None
