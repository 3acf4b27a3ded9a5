"""Where a run's files go: `runs/<model>/` (or `--out`), laid out as contract/paths.py says. The default run directory adds a server backend, the
thinking mode and the protocol when they were chosen (`runs/Qwen_Qwen3-8B-no-thinking`).
"""

from __future__ import annotations

from pathlib import Path

from wtb_local.contract.paths import RunPaths, model_dir_name
from wtb_local.run.setup.resolved import ResolvedRun


def run_paths(run: ResolvedRun) -> RunPaths:
    name = run.model_name or run.model or run.backend
    run_dir = Path(run.out) if run.out else Path("runs") / (model_dir_name(name) + dir_suffix(run))
    if run.shard:  # one shard of a sharded run: its own run directory, joined later by `merge`
        from wtb_local.contract.shard_dirs import SHARDS_DIR  # deferred: start-up
        from wtb_local.run.setup.shards import parse_shard  # deferred: start-up

        run_dir = run_dir / SHARDS_DIR / parse_shard(run.shard).dir_name
    return RunPaths(run_dir, name)


def dir_suffix(run: ResolvedRun) -> str:
    """What tells the default run directories of one model apart: a server backend (`-openai`), the
    thinking mode when asked for (`-thinking`, `-no-thinking`) and the protocol when it is not the default
    (`-paper`). The runs differ in their hashed configuration, so sharing a directory would refuse the
    second command."""
    from wtb_local.benchmark.protocols import protocol_named
    from wtb_local.engines import backend_class

    parts = []
    if backend_class(run.backend).capabilities.remote:  # another engine, configured outside this command
        parts.append(run.backend)
    if run.thinking is not None:
        parts.append("thinking" if run.thinking else "no-thinking")
    return "".join(f"-{part}" for part in parts) + protocol_named(run.protocol).dir_suffix()
