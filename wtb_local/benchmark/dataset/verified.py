"""The release file is checked every time it is used, not only after a download.

A file copied into the cache by hand (as the fetch error suggests) could be anything, e.g. the embedded
sample. Hashing 30 MB on every command would cost a noticeable fraction of a second, so the verdict is
remembered in a stamp file next to it, keyed by the file's size and modification time: a file that was
replaced or edited has another stamp key and is hashed again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from wtb_local.benchmark.dataset import blob
from wtb_local.benchmark.dataset.errors import DatasetError


def stamp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.verified")


def _key(path: Path) -> dict[str, int]:
    info = path.stat()
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns}


def recorded_sha1(path: Path) -> str | None:
    """The blob SHA-1 remembered for this file, when its size and mtime are still those hashed."""
    try:
        stamp = json.loads(stamp_path(path).read_text(encoding="utf-8"))
        if isinstance(stamp, dict) and {k: stamp.get(k) for k in ("size", "mtime_ns")} == _key(path):
            sha1 = stamp.get("blob_sha1")
            return sha1 if isinstance(sha1, str) else None
    except (OSError, ValueError):
        pass
    return None


def remember_sha1(path: Path, sha1: str) -> None:
    """Write the stamp (atomically); a read-only cache only means the file is hashed again next time."""
    stamp = stamp_path(path)
    tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps({**_key(path), "blob_sha1": sha1}) + "\n", encoding="utf-8")
        os.replace(tmp, stamp)
    except OSError:
        tmp.unlink(missing_ok=True)


def blob_sha1_cached(path: Path) -> str:
    """The file's git blob SHA-1: from the stamp when the file is unchanged, else hashed (and stamped)."""
    sha1 = recorded_sha1(path)
    if sha1 is None:
        sha1 = blob.file_blob_sha1(path)
        remember_sha1(path, sha1)
    return sha1


def verify_release(path: Path, expected_sha1: str) -> Path:
    """Refuse a release file whose blob SHA-1 is not the pinned one (one line naming both hashes)."""
    try:
        got = blob_sha1_cached(path)
    except OSError as exc:
        raise DatasetError(str(path), f"cannot read: {exc.strerror or exc}") from None
    if got != expected_sha1:
        raise DatasetError(
            str(path), f"not the pinned release file: git blob sha1 {got}, expected {expected_sha1}; "
            "delete it and run `python -m wtb_local data fetch`, or copy the real release file there")
    return path
