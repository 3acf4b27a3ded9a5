"""Helpers of the roster tests: the real CLI in a subprocess, with an empty (or fake) Hugging Face cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAPER_ROSTER = ROOT / "rosters" / "paper.toml"


def wtb(*args: str, hf_home: Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`python -m wtb_local ARGS` offline, with HF_HOME pointing at `hf_home`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("WTB_", "HF_"))}
    # the memory share planned for is the vLLM release's default (wtb_local/contract/vllm_release.py): fixed here
    full = {**base, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "WTB_VLLM_VERSION": "0.34.0",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), **(env or {})}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], capture_output=True, text=True, cwd=cwd or ROOT,
                          env=full, timeout=120, check=False)


def cache_config(hf_home: Path, repo: str, config: dict) -> Path:
    """A hub cache entry holding only `config.json` for `repo` (what huggingface_hub's cache layout is)."""
    folder = hf_home / "hub" / f"models--{repo.replace('/', '--')}"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text(commit)
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    path = snapshot / "config.json"
    path.write_text(json.dumps(config))
    return path
