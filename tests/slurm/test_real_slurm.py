"""The slurm/ templates on a real single-node Slurm (Debian's slurmctld + slurmd + munge on localhost).

slurm/submit_sharded.sh submits one model sharded over a 2-task array (template a, one GPU each) and the
merge-and-report job (template c, afterany). The runs use the openai backend with the tiny Qwen2.5-template
model's tokenizer against the loopback canned-reply server, on the embedded sample. One session of shard 1
is held at the server; while it is held the test sends the running array task SIGTERM through Slurm
(`scancel --signal=TERM`): the run stops cleanly, the template requeues the task, the rerun resumes the
shard (its 3 finished sessions skipped) once the held request is released. The merged metric file must
equal a one-process run's byte for byte, the result and score files too but for the measured latencies.

Runs in CI (CI=true) always: missing Slurm programs fail it there. Elsewhere it skips when they are missing
(`apt-get install -y slurm-wlm munge`). The cluster is private (own munge socket, ports, state and
SLURM_CONF) and always stopped.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.run.conftest import METRIC_NAME, RESULT_NAME, SCORE_NAME, read_jsonl, without_timing
from tests.run.fake_openai import fake_openai_server
from tests.slurm.cluster import local_slurm, missing_programs

ROOT = Path(__file__).resolve().parents[2]
MISSING = missing_programs()

# A private Slurm cluster started in the fixture, then jobs queued, run and waited for (up to 300 s
# each): more than the default limit.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(bool(MISSING) and os.environ.get("CI") != "true",
                       reason=f"Slurm not installed ({', '.join(MISSING)}): apt-get install -y slurm-wlm munge"),
]


def _held_marker() -> tuple[str, str]:
    """A session of shard 1 of 2 and a piece of its first user turn that no other session's prompt has."""
    from wtb_local.benchmark.dataset import read_dataset
    from wtb_local.contract.resources import sample_dataset_path
    from wtb_local.run.setup.shards import plan_shards

    sessions, _ = read_dataset(sample_dataset_path())
    held = plan_shards(sessions, 2)[1][-1]
    session = next(s for s in sessions if s.id == held)
    marker = session.english_tasks[0][:60]
    others = [json.dumps(s.model_dump(mode="json")) for s in sessions if s.id != held]
    assert all(marker not in text for text in others)
    return held, marker


def _wait(what: str, ready, timeout: float, cluster) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.5)
    queue = cluster.run("squeue", "-a", "-o", "%i %T %r", check=False).stdout
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; squeue: {queue!r}")


def _job_field(cluster, job: str, field: str) -> str | None:
    text = cluster.run("scontrol", "show", "job", job, check=False).stdout
    match = re.search(rf"\b{field}=(\S+)", text)
    return match.group(1) if match else None


def test_sharded_array_with_preemption_merges_to_the_one_process_run(qwen_tiny_dir: Path,
                                                                     tmp_path: Path) -> None:
    if MISSING:
        pytest.fail(f"CI=true but Slurm is not installed ({', '.join(MISSING)}); .ci/run installs it")
    held, marker = _held_marker()
    work, run_dir, single = tmp_path / "work", tmp_path / "work" / "runs" / "sharded", tmp_path / "single"
    work.mkdir()
    with fake_openai_server(str(qwen_tiny_dir)) as server:
        server.hold_markers.append(marker)
        env = {
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "WTB_MODEL": str(qwen_tiny_dir), "WTB_MODEL_NAME": "fake", "WTB_BACKEND": "openai",
            "WTB_BASE_URL": server.base_url, "WTB_DATASET": "sample", "WTB_OUT": str(run_dir),
            "WTB_SHARDS": "2", "HF_HUB_OFFLINE": "1",
        }
        with local_slurm(gpus=2) as cluster:
            submitted = cluster.run("bash", str(ROOT / "slurm" / "submit_sharded.sh"), "--cpus-per-task=1",
                                    "--mem=2G", "--time=10", cwd=work, env=env, timeout=60)
            match = re.fullmatch(r"shards: job (\d+) \(array 0-1\); merge: job (\d+)", submitted.stdout.strip())
            assert match, submitted.stdout + submitted.stderr
            array, merge = match.groups()
            task = f"{array}_1"

            _wait("the held request of shard 1", lambda: any(marker in server.prompt_text(r.get("prompt", "")) for r in list(server.requests)),
                  150, cluster)
            # Preempt with exactly the held session in flight: its 3 siblings are on disk first (sessions are
            # in flight together, so the held request can arrive before the last sibling is written).
            shard_result = run_dir / "shards" / "1-of-2" / "result" / "fake" / "Wild-Tool-Bench_result.jsonl"
            _wait("the 3 other sessions of shard 1 on disk",
                  lambda: shard_result.exists() and len(shard_result.read_text().splitlines()) == 3, 60, cluster)
            assert _job_field(cluster, task, "JobState") == "RUNNING"
            cluster.run("scancel", "--signal=TERM", task)
            shard_manifest = run_dir / "shards" / "1-of-2" / "manifest.json"
            # The run records "interrupted" while the held request is still open; only then is it let go (an
            # in-flight HTTP request is waited for before the process exits).
            _wait("shard 1 to stop", lambda: json.loads(shard_manifest.read_text())["status"] == "interrupted",
                  60, cluster)
            server.release.set()
            _wait("the requeue of shard 1", lambda: _job_field(cluster, task, "Restarts") == "1"
                  and _job_field(cluster, task, "JobState") == "PENDING", 90, cluster)
            # Slurm holds a requeued job for about two minutes (Reason=BeginTime); start it now instead.
            cluster.run("scontrol", "update", f"JobId={task}", "StartTime=now")
            _wait("every job to end", lambda: not cluster.run("squeue", "-h", "-o", "%i").stdout.strip(),
                  180, cluster)
            logs = {path.name: path.read_text(errors="replace") for path in (work / "logs").iterdir()}

        shard_log = logs[f"wtb_shard_{array}_1.out"]
        assert f"requeueing job {task} to resume" in shard_log, shard_log
        assert "requeueing" not in logs[f"wtb_shard_{array}_0.out"]  # only the signalled task was requeued
        assert (f"resuming {run_dir / 'shards' / '1-of-2'}: 3 finished session(s) skipped, 1 to run"
                in shard_log), shard_log
        merge_log = logs[f"wtb_merge_{merge}.out"]
        assert "merged 2 shards, 8 sessions" in merge_log, merge_log
        manifest = json.loads((run_dir / "shards" / "1-of-2" / "manifest.json").read_text())
        assert len(manifest["invocations"]) == 2 and held in manifest["shard"]["sessions"]

        proc = subprocess.run([sys.executable, "-m", "wtb_local", "run", "--backend", "openai", "--base-url",
                               server.base_url, "--model", str(qwen_tiny_dir), "--model-name", "fake",
                               "--dataset", "sample", "--out", str(single), "--progress", "none"],
                              cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
                              env={k: v for k, v in {**os.environ, **env}.items() if not k.startswith("WTB_")})
        assert proc.returncode == 0, proc.stderr

    name = f"score/fake/{METRIC_NAME}"
    assert (run_dir / name).read_bytes() == (single / name).read_bytes()
    for name in (f"result/fake/{RESULT_NAME}", f"score/fake/{SCORE_NAME}"):  # rows keep each step's latency
        assert without_timing(read_jsonl(run_dir / name)) == without_timing(read_jsonl(single / name)), name
    merged_rows = read_jsonl(run_dir / "result" / "fake" / RESULT_NAME)
    assert [row["id"] for row in merged_rows] == [f"wild_tool_bench_{i}" for i in range(8)]
    assert "Table 6" in merge_log and merge_log.count("fake") >= 2  # merge and report both printed the row
