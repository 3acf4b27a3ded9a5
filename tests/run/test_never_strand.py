"""A failed start never blocks the corrected command; the command pairs of docs/gpus-and-slurm.md get
their own default run directories (docs/files.md, "Errors are recorded, runs resume"). Real commands in a
subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _wtb(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "WTB_PROGRESS": "none"}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def test_a_failed_start_says_failed_and_the_corrected_command_runs(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    model = tmp_path / "model"
    shutil.copytree(qwen_tiny_dir, model)
    weights = sorted(model.glob("*.safetensors"))
    assert weights
    for path in weights:  # the tokenizer loads, the weights do not: the engine fails to start
        path.rename(path.with_suffix(".away"))
    base = ["--model", str(model), "--model-name", "tiny", "--backend", "transformers", "--dataset", "sample",
            "--limit", "1", "--max-new-tokens", "4", "--out", str(tmp_path / "run")]
    failed = _wtb(base, tmp_path)
    assert failed.returncode == 1 and failed.stderr.strip().splitlines()[-1].startswith(
        "Error: the transformers backend failed, run stopped (")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "failure" in manifest["invocations"][-1]

    for path in weights:
        path.with_suffix(".away").rename(path)
    corrected = _wtb([*base, "--max-model-len", "8192"], tmp_path)  # another configuration than the failed one
    assert corrected.returncode == 0, corrected.stderr
    assert "resuming" not in corrected.stderr
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["status"] == "complete"


def test_thinking_and_no_thinking_runs_get_their_own_directories(tmp_path: Path) -> None:
    for flag in ("--thinking", "--no-thinking"):
        done = _wtb(["--model", "Qwen/Qwen3-8B", flag, "--backend", "oracle", "--dataset", "sample",
                     "--limit", "1"], tmp_path)
        assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["Qwen_Qwen3-8B-no-thinking",
                                                                     "Qwen_Qwen3-8B-thinking"]
    manifest = json.loads((tmp_path / "runs" / "Qwen_Qwen3-8B-no-thinking" / "manifest.json").read_text())
    assert manifest["config"]["template_kwargs"] == {"enable_thinking": False}
