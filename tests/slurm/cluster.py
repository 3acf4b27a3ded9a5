"""A private Slurm cluster on localhost (one node, or several slurmd on this host), for tests: its own
munged socket, ports, state and configuration (clients find it through SLURM_CONF), so it never touches a
system cluster. Started and stopped by the test (every daemon by its pid, also when the test fails)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")


def missing_programs() -> list[str]:
    return [name for name in DAEMONS if shutil.which(name) is None and not Path(f"/usr/sbin/{name}").exists()]


def _program(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return max(1024, int(line.split()[1]) // 1024 // 2)
    return 2048


def _config(tmp: Path, host: str, gpus: int, nodes: list[str]) -> str:
    ports = (_free_port(), _free_port())
    several = nodes != [host]  # per-node slurmd files: Slurm puts the node name for %n
    slurmd = "-%n" if several else ""
    if not several:
        node_lines = [f"NodeName={host} CPUs={os.cpu_count() or 1} RealMemory={_memory_mb()} Gres=gpu:{gpus} State=UNKNOWN"]
    else:  # several slurmd on this host (slurmd -N NAME), each its own port: several nodes on one machine
        node_lines = [f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={_free_port()} "
                      f"CPUs={os.cpu_count() or 1} RealMemory={_memory_mb() // len(nodes)} Gres=gpu:{gpus} "
                      "State=UNKNOWN" for name in nodes]
    return "\n".join([
        "ClusterName=wtbtest",
        f"SlurmctldHost={host}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        f"AuthInfo=socket={tmp / 'munge' / 'munge.socket'}",
        f"SlurmctldPort={ports[0]}",
        f"SlurmdPort={ports[1]}",
        f"StateSaveLocation={tmp / 'state'}",
        f"SlurmdSpoolDir={tmp / 'spool'}{'/%n' if several else ''}",
        f"SlurmctldPidFile={tmp / 'slurmctld.pid'}",
        f"SlurmdPidFile={tmp / f'slurmd{slurmd}.pid'}",
        f"SlurmctldLogFile={tmp / 'slurmctld.log'}",
        f"SlurmdLogFile={tmp / f'slurmd{slurmd}.log'}",
        "ProctrackType=proctrack/pgid",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "MpiDefault=none",
        "ReturnToService=2",
        "JobRequeue=1",
        "GresTypes=gpu",
        # GPUs are declared only so that the templates' --gpus=1 is scheduled as on a GPU cluster.
        *node_lines,
        "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        "SchedulerParameters=sched_interval=2,bf_interval=1",
        "",
    ])


class Cluster:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.conf = tmp / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.procs: list[subprocess.Popen] = []

    def run(self, *args: str, check: bool = True, timeout: float = 30, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run([_program(args[0]), *args[1:]], capture_output=True, text=True, timeout=timeout,
                              env={**self.env, **(env or {})}, cwd=cwd, check=False)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc

    def _start(self, *args: str, log: str) -> subprocess.Popen:
        handle = open(self.tmp / log, "w")  # noqa: SIM115 - kept open while the daemon runs
        proc = subprocess.Popen([_program(args[0]), *args[1:]], stdout=handle, stderr=subprocess.STDOUT,
                                env=self.env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def wait_until(self, what: str, ready, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            time.sleep(0.5)
        raise TimeoutError(f"{what} not ready after {timeout:.0f} s; logs in {self.tmp}: {self.logs()}")

    def logs(self) -> str:
        tails = []
        for name in ("munged.log", "slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"):
            path = self.tmp / name
            if path.exists():
                tails.append(f"--- {name}: " + " | ".join(path.read_text(errors="replace").splitlines()[-8:]))
        return "\n".join(tails)

    def start(self, gpus: int, nodes: int = 1) -> None:
        host = socket.gethostname().split(".")[0]
        names = [host] if nodes == 1 else [f"node{i}" for i in range(1, nodes + 1)]
        for sub in ("state", "spool", "munge"):
            (self.tmp / sub).mkdir(mode=0o700)
        for name in names if nodes > 1 else ():
            (self.tmp / "spool" / name).mkdir(mode=0o700)
        self.conf.write_text(_config(self.tmp, host, gpus, names))
        # Slurm drops file-less GPUs: two harmless character devices stand in for the device files.
        devices = ("/dev/null", "/dev/zero")[:gpus]
        (self.tmp / "gres.conf").write_text("AutoDetect=off\n" + "".join(
            f"NodeName={name} Name=gpu File={device}\n" for name in names for device in devices))
        munge = self.tmp / "munge"
        self._start("munged", "--foreground", "--force", f"--socket={munge / 'munge.socket'}",
                    f"--pid-file={munge / 'munged.pid'}", f"--log-file={self.tmp / 'munged.log'}",
                    f"--seed-file={munge / 'munged.seed'}", log="munged.out")
        self.wait_until("munged", lambda: (munge / "munge.socket").exists(), 20)
        self._start("slurmctld", "-D", "-c", "-f", str(self.conf), log="slurmctld.out")
        if nodes == 1:
            self._start("slurmd", "-D", "-c", "-f", str(self.conf), log="slurmd.out")
        for name in names if nodes > 1 else ():
            self._start("slurmd", "-D", "-c", "-f", str(self.conf), "-N", name, log=f"slurmd-{name}.out")

        def idle() -> bool:
            proc = self.run("sinfo", "-h", "-N", "-o", "%T", check=False, timeout=10)
            return proc.returncode == 0 and proc.stdout.split() == ["idle"] * nodes

        self.wait_until("the Slurm node", idle, 90)

    def stop(self) -> None:
        """Cancel every job, wait for them to end, stop the daemons, then end any job step process of
        this cluster that outlived slurmd (found by this cluster's SLURM_CONF in its environment)."""
        try:
            self.run("scancel", "--user", "root", check=False, timeout=15)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                queue = self.run("squeue", "-h", "-o", "%i", check=False, timeout=10)
                if queue.returncode != 0 or not queue.stdout.strip():
                    break
                time.sleep(1)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for proc in reversed(self.procs):  # slurmd, slurmctld, then munged
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        for pid in self.step_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def step_pids(self) -> list[int]:
        marker = f"SLURM_CONF={self.conf}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if b"slurmstepd" in (entry / "cmdline").read_bytes() and marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
        return found


@contextmanager
def local_slurm(gpus: int = 2, nodes: int = 1) -> Iterator[Cluster]:
    """A running cluster; always stopped and removed afterwards. `nodes` > 1: that many Slurm nodes
    (node1, node2, ...), each its own slurmd on this host, `gpus` on each."""
    tmp = Path(tempfile.mkdtemp(prefix="wtb-slurm-"))
    cluster = Cluster(tmp)
    try:
        cluster.start(gpus, nodes)
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)
