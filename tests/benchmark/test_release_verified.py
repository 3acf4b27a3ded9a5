"""The release file in the cache is verified whenever it is used (docs/getting-started.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wtb_local.benchmark.dataset import DatasetError, resolve_dataset
from wtb_local.benchmark.dataset import blob as blob_module
from wtb_local.benchmark.dataset.blob import git_blob_sha1
from wtb_local.benchmark.dataset.fetch import RELEASE_BLOB_SHA1, RELEASE_FILE_NAME
from wtb_local.benchmark.dataset.verified import blob_sha1_cached, stamp_path, verify_release
from wtb_local.contract.resources import sample_dataset_path

ROOT = Path(__file__).resolve().parents[2]


def _sample_copy(cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    dest = cache / RELEASE_FILE_NAME
    dest.write_bytes(sample_dataset_path().read_bytes())
    return dest


def test_a_hand_copied_sample_is_refused_naming_both_hashes(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WTB_CACHE_DIR", str(tmp_path / "cache"))
    dest = _sample_copy(tmp_path / "cache")
    got = git_blob_sha1(dest.read_bytes())
    with pytest.raises(DatasetError) as info:
        resolve_dataset("release")
    assert str(info.value) == (
        f"{dest}: not the pinned release file: git blob sha1 {got}, expected {RELEASE_BLOB_SHA1}; delete it and "
        "run `python -m wtb_local data fetch`, or copy the real release file there")


def test_the_verdict_is_cached_by_size_and_mtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / RELEASE_FILE_NAME
    path.write_bytes(b"first\n")
    calls: list[Path] = []
    real = blob_module.file_blob_sha1
    monkeypatch.setattr(blob_module, "file_blob_sha1", lambda p: calls.append(Path(p)) or real(p))
    expected = git_blob_sha1(b"first\n")
    assert verify_release(path, expected) == path
    assert verify_release(path, expected) == path
    assert calls == [path]  # hashed once, then read from the stamp
    assert stamp_path(path).is_file()
    # Same size, new content and mtime: hashed again, and refused.
    path.write_bytes(b"other\n")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    other = git_blob_sha1(b"other\n")
    with pytest.raises(DatasetError, match=f"git blob sha1 {other}, expected {expected}"):
        verify_release(path, expected)
    assert calls == [path, path]
    assert blob_sha1_cached(path) == other and calls == [path, path]


def test_a_forged_stamp_for_another_size_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / RELEASE_FILE_NAME
    path.write_bytes(b"abc\n")
    stamp_path(path).write_text(f'{{"size": 99, "mtime_ns": 1, "blob_sha1": "{RELEASE_BLOB_SHA1}"}}\n')
    with pytest.raises(DatasetError, match="not the pinned release file"):
        verify_release(path, RELEASE_BLOB_SHA1)


def test_run_on_a_hand_copied_sample_is_refused_in_one_line(tmp_path: Path) -> None:
    _sample_copy(tmp_path / "cache")
    env = {**os.environ, "WTB_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "wtb_local", "--model", "Qwen/Qwen3-8B", "--backend", "oracle",
                           "--out", str(tmp_path / "run"), "--progress", "none"],
                          check=False, capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "not the pinned release file" in lines[0]
    assert RELEASE_BLOB_SHA1 in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()
