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


def _fake_bin(tmp_path: Path, **scripts: str) -> Path:
    """Fake commands that append their arguments (one per line, then `--`) to <name>_args."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir(exist_ok=True)
    for name, body in scripts.items():
        path = fake_bin / name
        path.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$@" -- >> {tmp_path / (name + "_args")}\n{body}\n')
        path.chmod(0o755)
    return fake_bin


def _calls(tmp_path: Path, name: str) -> list[list[str]]:
    path = tmp_path / f"{name}_args"
    if not path.exists():
        return []
    calls, current = [], []
    for line in path.read_text().splitlines():
        if line == "--":
            calls.append(current)
            current = []
        else:
            current.append(line)
    return calls


def _bash(tmp_path: Path, script: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("WTB_", "SLURM_"))}
    full_env = {**clean, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SLURM_SUBMIT_DIR": str(work), **env}
    return subprocess.run(["bash", str(script), *args], env=full_env, cwd=work, capture_output=True, text=True,
                          check=False, timeout=60)


def test_shard_task_runs_its_shard_and_requeues_itself_when_stopped(tmp_path: Path) -> None:
    _fake_bin(tmp_path, srun='echo "WTB_SHARD=$WTB_SHARD" >&2; exit "${FAKE_STATUS:-0}"', scontrol="")
    env = {"WTB_MODEL": "Qwen/Qwen3-8B", "SLURM_JOB_ID": "9", "SLURM_ARRAY_JOB_ID": "7",
           "SLURM_ARRAY_TASK_ID": "2"}
    done = _bash(tmp_path, ROOT / "slurm" / "wtb_shards.sbatch", env)
    assert done.returncode == 0 and "WTB_SHARD=auto" in done.stderr
    assert _calls(tmp_path, "srun") == [["python", "-m", "wtb_local", "run"]]
    assert _calls(tmp_path, "scontrol") == []
    stopped = _bash(tmp_path, ROOT / "slurm" / "wtb_shards.sbatch", {**env, "FAKE_STATUS": "130"})
    assert stopped.returncode == 130
    assert _calls(tmp_path, "scontrol") == [["requeue", "7_2"]]  # the task, not the whole array (job 7)
    capped = _bash(tmp_path, ROOT / "slurm" / "wtb_shards.sbatch",
                   {**env, "FAKE_STATUS": "130", "SLURM_RESTART_COUNT": "5"})
    assert capped.returncode == 130 and len(_calls(tmp_path, "scontrol")) == 1  # WTB_MAX_REQUEUES reached
    failed = _bash(tmp_path, ROOT / "slurm" / "wtb_shards.sbatch", {**env, "FAKE_STATUS": "1"})
    assert failed.returncode == 1 and len(_calls(tmp_path, "scontrol")) == 1  # a failure is not requeued


def test_submit_script_chains_merge_after_the_array(tmp_path: Path) -> None:
    _fake_bin(tmp_path, sbatch='if [[ "$*" == *--array* ]]; then echo "41;cluster"; else echo 42; fi')
    proc = _bash(tmp_path, ROOT / "slurm" / "submit_sharded.sh",
                 {"WTB_MODEL": "Qwen/Qwen3-8B", "WTB_SHARDS": "4"}, "--partition=gpu")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "shards: job 41 (array 0-3); merge: job 42\n"
    assert _calls(tmp_path, "sbatch") == [
        ["--parsable", "--array=0-3", "--partition=gpu", str(ROOT / "slurm" / "wtb_shards.sbatch")],
        ["--parsable", "--dependency=afterany:41", "--partition=gpu", str(ROOT / "slurm" / "wtb_merge.sbatch")],
    ]
    assert (tmp_path / "work" / "logs").is_dir()
    bad = _bash(tmp_path, ROOT / "slurm" / "submit_sharded.sh", {"WTB_MODEL": "m", "WTB_SHARDS": "0"})
    assert bad.returncode == 1 and bad.stderr == "WTB_SHARDS must be a positive number, got '0'\n"


def test_merge_job_merges_then_reports_the_run_directory(tmp_path: Path) -> None:
    _fake_bin(tmp_path, python="")
    proc = _bash(tmp_path, ROOT / "slurm" / "wtb_merge.sbatch", {"WTB_MODEL": "Qwen/Qwen3-8B"})
    assert proc.returncode == 0, proc.stderr
    assert _calls(tmp_path, "python") == [["-m", "wtb_local", "merge", "runs/Qwen_Qwen3-8B"],
                                          ["-m", "wtb_local", "report", "runs/Qwen_Qwen3-8B"]]
    proc = _bash(tmp_path, ROOT / "slurm" / "wtb_merge.sbatch", {"WTB_OUT": "/data/run"})
    assert _calls(tmp_path, "python")[2:] == [["-m", "wtb_local", "merge", "/data/run"],
                                              ["-m", "wtb_local", "report", "/data/run"]]
    proc = _bash(tmp_path, ROOT / "slurm" / "wtb_merge.sbatch", {})
    assert proc.returncode == 1
    assert proc.stderr == "set WTB_OUT to the run directory (or WTB_MODEL as for the shards)\n"
