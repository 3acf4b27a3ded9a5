"""slurm/wtb_multinode.sbatch on a real two-node Slurm: two slurmd on this host (node1, node2), so the
template's Ray head (node1) and Ray worker (node2, started by its own srun) both run on 127.0.0.1.

- vLLM's CPU build with the Ray executor: the Ray cluster forms (2 nodes, checked by the driver side
  before the run starts), the run asks for 1-way tensor x 2-way pipeline parallel over Ray, and the CPU
  build's refusal (its platform has no Ray device) is one line in the log; the job fails, is not requeued,
  and no Ray process outlives it.
- preemption: the openai backend against the loopback fake server, one session held; `scancel
  --signal=TERM` (every step: the run and both Ray nodes) stops the run, the template requeues the job, the rerun starts Ray again and resumes
  (7 sessions skipped, 1 run), and the run directory ends complete.

CI=true: runs or fails (missing Slurm or Ray fail it). Elsewhere missing programs or Ray skip it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.run.conftest import RESULT_NAME
from tests.run.fake_openai import fake_openai_server
from tests.slurm.cluster import Cluster, local_slurm, missing_programs

ROOT = Path(__file__).resolve().parents[2]
MISSING = missing_programs() + ([] if importlib.util.find_spec("ray") else ["ray (pip install ray)"])
IN_CI = os.environ.get("CI") == "true"

# A private Slurm cluster started in the fixture, then jobs queued, run and waited for (up to 300 s
# each): more than the default limit.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(bool(MISSING) and not IN_CI, reason=f"not installed: {', '.join(MISSING)}"),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ray_pids(cluster: Cluster) -> list[int]:
    """Ray's processes started under this cluster's jobs (their environment names its SLURM_CONF)."""
    marker = f"SLURM_CONF={cluster.conf}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if (b"raylet" in cmdline or b"gcs_server" in cmdline or b"ray" in cmdline.split(b"\0")[0]
                    or b"/ray/" in cmdline) and marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@contextmanager
def two_nodes() -> Iterator[Cluster]:
    if MISSING:
        pytest.fail(f"CI=true but not installed: {', '.join(MISSING)}; .ci/run installs them")
    with local_slurm(gpus=1, nodes=2) as cluster:
        try:
            yield cluster
        finally:
            for pid in _ray_pids(cluster):  # whatever the template failed to stop, by pid
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


def _env(model: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "WTB_MODEL": str(model), "WTB_MODEL_NAME": "tiny", "WTB_DATASET": "sample", "WTB_NODES": "2",
        "WTB_RAY_HEAD_IP": "127.0.0.1", "WTB_RAY_PORT": str(_free_port()),
        "WTB_RAY_ARGS": "--num-cpus=1 --object-store-memory=100000000", "WTB_PROGRESS": "plain",
        "WTB_RAY_WAIT_S": "150",
        "HF_HUB_OFFLINE": "1", **extra,
    }


def _submit(cluster: Cluster, work: Path, env: dict[str, str]) -> str:
    proc = cluster.run("sbatch", "--parsable", "--nodes=2", "--gpus-per-node=1", "--cpus-per-task=1",
                       "--mem=2G", "--time=10", str(ROOT / "slurm" / "wtb_multinode.sbatch"), cwd=work, env=env)
    return proc.stdout.strip().split(";")[0]


def _wait(what: str, ready, timeout: float, cluster: Cluster, work: Path, *, queued: bool = False) -> None:
    """Poll `ready`; `queued`: fail as soon as the queue is empty (the job ended first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if queued and _queue_empty(cluster):
            break
        time.sleep(0.5)
    queue = cluster.run("squeue", "-a", "-o", "%i %T %r", check=False).stdout
    logs = "".join(path.read_text(errors="replace")[-3000:] for path in sorted(work.glob("logs/*")))
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; squeue: {queue!r}; logs: {logs}")


def _job_field(cluster: Cluster, job: str, field: str) -> str | None:
    text = cluster.run("scontrol", "show", "job", job, check=False).stdout
    match = re.search(rf"\b{field}=(\S+)", text)
    return match.group(1) if match else None


def _queue_empty(cluster: Cluster) -> bool:
    return not cluster.run("squeue", "-h", "-o", "%i").stdout.strip()


@pytest.mark.vllm
def test_vllm_cpu_over_a_two_node_ray_cluster(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    if importlib.util.find_spec("vllm") is None:
        if IN_CI:
            pytest.fail("CI=true but vLLM is not installed")
        pytest.skip("vLLM not installed")
    work = tmp_path / "work"
    (work / "logs").mkdir(parents=True)
    env = _env(qwen_tiny_dir, WTB_BACKEND="vllm", WTB_LIMIT="1", WTB_MAX_NEW_TOKENS="8",
               WTB_ENFORCE_EAGER="true", WTB_OUT=str(work / "run"), VLLM_CPU_KVCACHE_SPACE="1")
    with two_nodes() as cluster:
        job = _submit(cluster, work, env)
        _wait("the job to end", lambda: _queue_empty(cluster), 300, cluster, work)
        leftover = _ray_pids(cluster)
        log = (work / "logs" / f"wtb_{job}.out").read_text(errors="replace")
    assert leftover == [], "Ray processes outlived the job"
    assert ("wtb_multinode: 2 node(s) (node1 node2), 1-way tensor x 2-way pipeline parallel, Ray head "
            f"127.0.0.1:{env['WTB_RAY_PORT']}") in log, log
    assert re.search(rf"ray cluster: 2 node\(s\) alive at 127\.0\.0\.1:{env['WTB_RAY_PORT']} \(", log), log
    assert ("Error: the vllm backend failed, run stopped (ValueError: --distributed-executor-backend ray: "
            "vLLM's cpu platform does not support Ray (it has no Ray device key); use mp or leave it unset)") in log
    assert "requeueing" not in log
    manifest = json.loads((work / "run" / "manifest.json").read_text())
    assert manifest["status"] == "failed"


def test_preempted_multinode_job_requeues_and_resumes(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    from wtb_local.benchmark.dataset import read_dataset
    from wtb_local.contract.resources import sample_dataset_path

    sessions, _ = read_dataset(sample_dataset_path())
    held = sessions[-1]
    marker = held.english_tasks[0][:60]
    assert all(marker not in json.dumps(s.model_dump(mode="json")) for s in sessions[:-1])
    work, run_dir = tmp_path / "work", tmp_path / "work" / "run"
    (work / "logs").mkdir(parents=True)
    result = run_dir / "result" / "tiny" / RESULT_NAME
    with fake_openai_server(str(qwen_tiny_dir)) as server, two_nodes() as cluster:
        server.hold_markers.append(marker)
        env = _env(qwen_tiny_dir, WTB_BACKEND="openai", WTB_BASE_URL=server.base_url, WTB_OUT=str(run_dir))
        job = _submit(cluster, work, env)
        _wait("the held request and the 7 other sessions", lambda: result.exists() and len(
            result.read_text().splitlines()) == len(sessions) - 1 and any(
            marker in server.prompt_text(r.get("prompt", "")) for r in list(server.requests)), 240, cluster, work,
              queued=True)
        cluster.run("scancel", "--signal=TERM", job)  # every step of the job: the run and both Ray nodes
        _wait("the run to stop", lambda: json.loads((run_dir / "manifest.json").read_text())["status"]
              == "interrupted", 60, cluster, work)
        server.release.set()
        _wait("the requeue", lambda: _job_field(cluster, job, "Restarts") == "1"
              and _job_field(cluster, job, "JobState") == "PENDING", 90, cluster, work)
        cluster.run("scontrol", "update", f"JobId={job}", "StartTime=now")  # skip Slurm's ~2 min hold
        _wait("the job to end", lambda: _queue_empty(cluster), 240, cluster, work)
        leftover = _ray_pids(cluster)
        log = (work / "logs" / f"wtb_{job}.out").read_text(errors="replace")
    assert leftover == [], "Ray processes outlived the job"
    assert f"requeueing job {job} to resume" in log, log
    assert log.count("ray cluster: 2 node(s) alive at 127.0.0.1:") == 2, log  # Ray started again on the rerun
    assert f"resuming {run_dir}: {len(sessions) - 1} finished session(s) skipped, 1 to run" in log, log
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["invocations"]) == 2
    assert [json.loads(line)["id"] for line in result.read_text().splitlines()] == [s.id for s in sessions]
