"""Wait until a Ray cluster has the expected number of live nodes; print them in one line.

    python -m wtb_local.engines.ray_wait HEAD_IP:PORT NODES [TIMEOUT_S]

Used by slurm/wtb_multinode.sbatch between starting Ray on every node and starting the run (docs/multinode.md §2).
Exit 0 once NODES nodes are alive, 1 with a one-line reason after TIMEOUT_S (default 300).
"""

from __future__ import annotations

import socket
import sys
import time


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: python -m wtb_local.engines.ray_wait HEAD_IP:PORT NODES [TIMEOUT_S]", file=sys.stderr)
        return 2
    address, nodes = argv[0], int(argv[1])
    timeout = float(argv[2]) if len(argv) == 3 else 300.0
    host, _, port = address.rpartition(":")
    try:
        import ray
    except ImportError:
        print("ray_wait: Ray is not installed here (pip install ray; vLLM's multi-node path needs it)",
              file=sys.stderr)
        return 1
    deadline = time.monotonic() + timeout
    while not _port_open(host, int(port)):  # the head's GCS: ray.init would wait without saying why
        if time.monotonic() > deadline:
            print(f"ray_wait: no Ray head at {address} after {timeout:.0f} s", file=sys.stderr)
            return 1
        time.sleep(1)
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    try:
        while True:
            alive = sorted((n["NodeManagerAddress"], n["NodeManagerPort"]) for n in ray.nodes() if n["Alive"])
            if len(alive) >= nodes:
                listed = ", ".join(f"{ip}:{p}" for ip, p in alive)
                gpus = int(ray.cluster_resources().get("GPU", 0))
                print(f"ray cluster: {len(alive)} node(s) alive at {address} ({listed}); {gpus} GPU(s)")
                return 0
            if time.monotonic() > deadline:
                print(f"ray_wait: {len(alive)} of {nodes} Ray node(s) alive at {address} after {timeout:.0f} s",
                      file=sys.stderr)
                return 1
            time.sleep(1)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
