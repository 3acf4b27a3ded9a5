"""The SLURM scripts build the right command line (run with a fake `srun` on PATH)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _run_script(tmp_path: Path, script: str, env: dict[str, str]) -> list[str]:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    record = tmp_path / "srun_args"
    srun = fake_bin / "srun"
    srun.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$@" > {record}\n')
    srun.chmod(0o755)
    work = tmp_path / "work"
    (work / "slurm").mkdir(parents=True)
    shutil.copy(ROOT / "slurm" / "models.txt", work / "slurm" / "models.txt")
    full_env = {**os.environ, "PATH": f"{fake_bin}:{os.environ['PATH']}", "SLURM_SUBMIT_DIR": str(work), **env}
    proc = subprocess.run(
        ["bash", str(ROOT / "slurm" / script)], env=full_env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return record.read_text().splitlines()


def test_array_task_picks_its_model_line(tmp_path: Path) -> None:
    args = _run_script(tmp_path, "wtb_array.sbatch", {"SLURM_ARRAY_TASK_ID": "1"})
    assert args[:4] == ["python", "-m", "wtb_local", "--model"]
    assert args[4] == "Qwen/Qwen3-8B"
    assert args[5] == "--out" and args[6].endswith("Qwen_Qwen3-8B_--no-thinking")
    assert args[7:] == ["--no-thinking"]


def test_array_index_past_the_list_fails(tmp_path: Path) -> None:
    fake_env = {"SLURM_ARRAY_TASK_ID": "99"}
    with pytest.raises(AssertionError):
        _run_script(tmp_path, "wtb_array.sbatch", fake_env)


def test_single_job_needs_model_and_uses_env(tmp_path: Path) -> None:
    args = _run_script(tmp_path, "wtb_single.sbatch", {"WTB_MODEL": "Qwen/Qwen3-8B"})
    assert args == ["python", "-m", "wtb_local", "run"]
