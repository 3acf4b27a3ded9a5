"""`plan ROSTER --submit --dry-run`: the sbatch command lines of the paper roster, exactly (one array per
single-node resource class, one multi-node job per entry that needs two nodes, driven by WTB_* variables
and WTB_NODES, then the report job with afterany on all of them); the lines run as a shell script against
a fake sbatch that records what it was given."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.roster.conftest import PAPER_ROSTER, ROOT, wtb

GPU1 = ("Qwen2.5-0.5B-Instruct Qwen2.5-1.5B-Instruct Qwen2.5-3B-Instruct Qwen2.5-7B-Instruct Qwen2.5-14B-Instruct "
        "Qwen3-0.6B Qwen3-0.6B-Thinking Qwen3-1.7B Qwen3-1.7B-Thinking Qwen3-4B Qwen3-4B-Thinking Qwen3-8B "
        "Qwen3-8B-Thinking Qwen3-14B Qwen3-14B-Thinking Llama-3.3-1B-Instruct Llama-3.3-3B-Instruct "
        "Llama-3.3-8B-Instruct xLAM-2-1B xLAM-2-3B xLAM-2-8B ToolACE2-8B Watt-8B Hammer2.1-0.5B Hammer2.1-1.5B "
        "Hammer2.1-3B Hammer2.1-7B")


def _expected(runs: Path) -> list[str]:
    roster, slurm = PAPER_ROSTER, ROOT / "slurm"
    arrays = [("GPU1", "gpu1", GPU1, 26, 1),
              ("GPU2", "gpu2", ("Qwen2.5-32B-Instruct Qwen3-32B Qwen3-32B-Thinking Qwen3-30B-A3B "
               "Qwen3-30B-A3B-Thinking xLAM-2-32B"), 5, 2),
              ("GPU4", "gpu4", "Qwen2.5-72B-Instruct Llama-3.3-70B-Instruct xLAM-2-70B", 2, 4),
              ("GPU8", "gpu8", "GLM-4.5", 0, 8)]
    lines = [f"JOB_{var}=$(WTB_ROSTER={roster} WTB_ROSTER_ROWS={rows if ' ' not in rows else repr(rows)} "
             f"WTB_RUNS_DIR={runs} sbatch --parsable --job-name=wtb_roster_{name} --array=0-{last} --nodes=1 "
             f"--gpus={gpus} --partition=gpu {slurm}/wtb_roster.sbatch)"
             for var, name, rows, last, gpus in arrays]
    for row, model, thinking in (("Kimi-K2", "moonshotai/Kimi-K2-Instruct", ""),
                                 ("DeepSeek-V3", "deepseek-ai/DeepSeek-V3", ""),
                                 ("DeepSeek-V3.1", "deepseek-ai/DeepSeek-V3.1", " WTB_THINKING=false"),
                                 ("DeepSeek-R1", "deepseek-ai/DeepSeek-R1", "")):
        var = row.upper().replace("-", "_").replace(".", "_")
        lines.append(f"JOB_{var}=$(WTB_GPU_MEMORY_UTILIZATION=0.9 WTB_MAX_MODEL_LEN=32768 WTB_MODEL={model} "
                     f"WTB_MODEL_NAME={row} WTB_NODES=2 WTB_OUT={runs}/{row} WTB_PIPELINE_PARALLEL_SIZE=2 "
                     f"WTB_PROGRESS=plain WTB_PROTOCOL=paper WTB_TENSOR_PARALLEL_SIZE=8{thinking} sbatch --parsable "
                     f"--job-name=wtb_{row} --nodes=2 --gpus-per-node=8 --partition=gpu {slurm}/wtb_multinode.sbatch)")
    lines.append(f"WTB_ROSTER={roster} WTB_RUNS_DIR={runs} sbatch --parsable --job-name=wtb_roster_report "
                 "--partition=gpu --dependency=afterany:${JOB_GPU1}:${JOB_GPU2}:${JOB_GPU4}:${JOB_GPU8}:"
                 "${JOB_KIMI_K2}:${JOB_DEEPSEEK_V3}:${JOB_DEEPSEEK_V3_1}:${JOB_DEEPSEEK_R1} "
                 f"{slurm}/wtb_roster_report.sbatch")
    return lines


def test_the_paper_roster_submits_as_arrays_multinode_jobs_and_a_report(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    proc = wtb("plan", str(PAPER_ROSTER), "--submit", "--dry-run", "--runs-dir", str(runs),
               "--sbatch-option=--partition=gpu", hf_home=tmp_path / "hf")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-10].startswith("41 entries: 41 ok")
    assert lines[-9:] == _expected(runs)

    # The printed lines are a shell script: run it against a fake sbatch recording its arguments and the
    # WTB_* variables it was given, and answering with job ids.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "sbatch.log"
    log.write_text("")
    (bin_dir / "sbatch").write_text(
        "#!/usr/bin/env bash\n"
        f"n=$(( $(wc -l < {log}) + 100 ))\n"
        f"echo \"$n $* | $(env | grep -E '^WTB_(NODES|ROSTER_ROWS|MODEL)=' | sort | tr '\\n' ' ')\" >> {log}\n"
        "echo \"$n\"\n")
    (bin_dir / "sbatch").chmod(0o755)
    script = tmp_path / "submit.sh"
    script.write_text("set -euo pipefail\n" + "\n".join(lines[-9:]) + "\n")
    subprocess.run(["bash", str(script)], check=True, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    calls = log.read_text().splitlines()
    assert len(calls) == 9
    assert calls[4].startswith("104 --parsable --job-name=wtb_Kimi-K2 --nodes=2 --gpus-per-node=8 --partition=gpu ")
    assert calls[4].endswith("| WTB_MODEL=moonshotai/Kimi-K2-Instruct WTB_NODES=2 ")
    assert calls[0].endswith(f"| WTB_ROSTER_ROWS={GPU1} ")
    assert "--dependency=afterany:100:101:102:103:104:105:106:107 " in calls[8]


def test_test_overrides_force_gpus_and_one_node(tmp_path: Path) -> None:
    """WTB_ROSTER_GPUS=0 and WTB_ROSTER_SINGLE_NODE (the real-Slurm test's overrides): no GPU request, and
    the two-node entries become tasks of a single-node array of their class."""
    proc = wtb("plan", str(PAPER_ROSTER), "--submit", "--dry-run", "--runs-dir", str(tmp_path / "runs"),
               hf_home=tmp_path / "hf", env={"WTB_ROSTER_GPUS": "0", "WTB_ROSTER_SINGLE_NODE": "1"})
    assert proc.returncode == 0, proc.stderr
    jobs = [line for line in proc.stdout.splitlines() if "sbatch --parsable" in line]
    assert len(jobs) == 6 and not any("--gpus" in line for line in jobs)
    assert ("WTB_ROSTER_ROWS='Kimi-K2 DeepSeek-V3 DeepSeek-V3.1 DeepSeek-R1'" in jobs[4]
            and "--array=0-3 --nodes=1" in jobs[4] and jobs[4].endswith("wtb_roster.sbatch)"))


def _fake(tmp_path: Path, name: str, body: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$*" >> {tmp_path / (name + ".calls")}\n{body}\n')
    path.chmod(0o755)


def _template(tmp_path: Path, script: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    full = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SLURM_SUBMIT_DIR": str(work), **env}
    return subprocess.run(["bash", str(ROOT / "slurm" / script)], env=full, capture_output=True, text=True,
                          check=False, timeout=60)


def _calls(tmp_path: Path, name: str) -> list[str]:
    path = tmp_path / f"{name}.calls"
    return path.read_text().splitlines() if path.exists() else []


def test_roster_array_task_runs_its_row_and_requeues_itself_when_stopped(tmp_path: Path) -> None:
    _fake(tmp_path, "srun", 'exit "${FAKE_STATUS:-0}"')
    _fake(tmp_path, "scontrol", "")
    env = {"WTB_ROSTER": "/r/paper.toml", "WTB_ROSTER_ROWS": "Qwen3-8B Qwen3-8B-Thinking Watt-8B",
           "WTB_RUNS_DIR": "/data/runs", "SLURM_JOB_ID": "9", "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "1"}
    done = _template(tmp_path, "wtb_roster.sbatch", env)
    assert done.returncode == 0, done.stderr
    assert _calls(tmp_path, "srun") == [
        "python -m wtb_local roster-run /r/paper.toml Qwen3-8B-Thinking --runs-dir /data/runs"]
    stopped = _template(tmp_path, "wtb_roster.sbatch", {**env, "FAKE_STATUS": "130"})
    assert stopped.returncode == 130 and "requeueing job 7_1 to resume" in stopped.stderr
    assert _calls(tmp_path, "scontrol") == ["requeue 7_1"]  # the task, not the whole array
    capped = _template(tmp_path, "wtb_roster.sbatch", {**env, "FAKE_STATUS": "130", "SLURM_RESTART_COUNT": "5"})
    assert capped.returncode == 130 and len(_calls(tmp_path, "scontrol")) == 1
    failed = _template(tmp_path, "wtb_roster.sbatch", {**env, "FAKE_STATUS": "1"})
    assert failed.returncode == 1 and len(_calls(tmp_path, "scontrol")) == 1
    past = _template(tmp_path, "wtb_roster.sbatch", {**env, "SLURM_ARRAY_TASK_ID": "3"})
    assert past.returncode == 1 and past.stderr == "no roster row at array index 3 (3 rows)\n"
    unset = _template(tmp_path, "wtb_roster.sbatch", {k: v for k, v in env.items() if k != "WTB_ROSTER_ROWS"})
    assert unset.returncode == 1 and "set WTB_ROSTER_ROWS to the rows of this array" in unset.stderr


def test_roster_report_job_runs_roster_report(tmp_path: Path) -> None:
    _fake(tmp_path, "python", "")
    proc = _template(tmp_path, "wtb_roster_report.sbatch", {"WTB_ROSTER": "/r/paper.toml", "WTB_RUNS_DIR": "/data/runs"})
    assert proc.returncode == 0, proc.stderr
    assert _calls(tmp_path, "python") == ["-m wtb_local roster-report /r/paper.toml --runs-dir /data/runs"]


def test_run_options_reach_multinode_jobs_as_variables(tmp_path: Path) -> None:
    proc = wtb("plan", str(PAPER_ROSTER), "--submit", "--dry-run", hf_home=tmp_path / "hf",
               env={"WTB_ROSTER_RUN_OPTIONS": "--backend oracle --limit=2 --no-thinking"})
    kimi = next(line for line in proc.stdout.splitlines() if line.startswith("JOB_KIMI_K2="))
    assert kimi.startswith("JOB_KIMI_K2=$(WTB_BACKEND=oracle ") and " WTB_LIMIT=2 " in kimi and " WTB_THINKING=false " in kimi


def test_a_roster_with_an_error_is_not_submitted(tmp_path: Path) -> None:
    roster = tmp_path / "roster.toml"
    text = PAPER_ROSTER.read_text(encoding="utf-8")
    roster.write_text(text.replace('row = "Qwen2.5-72B-Instruct"', 'row = "Qwen2.5-72B-Instruct"\nmax_model_len = 65536', 1))
    proc = wtb("plan", str(roster), "--submit", "--dry-run", hf_home=tmp_path / "hf")
    assert proc.returncode == 1
    assert "    error: max_model_len 65536 exceeds the model's maximum 32768" in proc.stdout.splitlines()
    assert "sbatch" not in proc.stdout
    assert proc.stderr == "error: 1 entry cannot run as written: Qwen2.5-72B-Instruct\n"


def test_submit_without_slurm_is_one_line_and_submits_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    proc = wtb("plan", str(PAPER_ROSTER), "--submit", hf_home=tmp_path / "hf", env={"PATH": str(empty)},
               cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == ("Error: sbatch is not on PATH: --submit needs Slurm (run it where jobs are submitted, "
                           "e.g. a login node); --dry-run prints the sbatch command lines instead\n")
    assert not (tmp_path / "logs").exists()  # nothing created either
