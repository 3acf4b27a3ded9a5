"""Git blob ids of dataset files: how the pinned release file is identified (`git hash-object`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

_CHUNK = 1 << 16


def git_blob_sha1(data: bytes) -> str:
    """The id git gives a file with these bytes (`git hash-object`)."""
    digest = hashlib.sha1(usedforsecurity=False)
    digest.update(b"blob " + str(len(data)).encode() + b"\0")
    digest.update(data)
    return digest.hexdigest()


def file_blob_sha1(path: str | Path) -> str:
    """`git_blob_sha1` of a file's bytes, read in chunks."""
    path = Path(path)
    digest = hashlib.sha1(usedforsecurity=False)
    digest.update(b"blob " + str(path.stat().st_size).encode() + b"\0")
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()
