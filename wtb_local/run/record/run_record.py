"""What a run records about itself beyond its results: the sampling values actually used, the wtb_local
checkout it ran from."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from wtb_local.contract.jsonl import read_json_object
from wtb_local.run.setup.resolved import ResolvedRun


def _generation_config(model: str | None, revision: str | None) -> dict[str, Any] | None:
    """generation_config.json of a local directory or of the hub cache (never the network)."""
    if not model:
        return None
    local = Path(model).expanduser()
    path: Path | None = local / "generation_config.json" if local.is_dir() else None
    if path is None:
        try:
            from huggingface_hub import try_to_load_from_cache

            found = try_to_load_from_cache(model, "generation_config.json", revision=revision)
            path = Path(found) if isinstance(found, str) else None
        except Exception:  # noqa: BLE001 - no hub library or a malformed id: not on disk
            path = None
    if path is None or not path.is_file():
        return None
    return read_json_object(path)


def sampling_used(settings: ResolvedRun) -> dict[str, Any]:
    """The effective sampling of every request: the options over the model's generation_config, with
    transformers' `generate` semantics (engines/sampling_defaults.py), and where the values came from.
    Backends that generate with the model's generation_config when a value is unset (the paper's protocol)
    say so (`sampling_from`); the openai backend reads the same file and sends the resolved values."""
    from wtb_local.engines import backend_class

    sampling_from = backend_class(settings.backend).capabilities.sampling_from
    if sampling_from == "none":
        return {"source": f"none: the {settings.backend} backend does not sample"}
    requested = {k: v for k, v in (("temperature", settings.sampling.temperature),
                                   ("top_p", settings.sampling.top_p)) if v is not None}
    if sampling_from == "server":  # a server applies its own defaults to what is not sent
        return {"source": "the server's defaults, except the values sent", "sent": requested,
                "max_new_tokens": settings.sampling.max_new_tokens, "seed": settings.sampling.seed}
    from wtb_local.engines.sampling_defaults import model_defaults, resolve  # deferred: start-up

    generation_config = _generation_config(settings.model, settings.revision)
    resolved = resolve(settings.sampling, model_defaults(generation_config), settings.sampling.max_new_tokens)
    source = "generation_config.json" if generation_config is not None else "transformers' defaults (no " \
             "generation_config.json on disk)"
    return {"source": source + (", overridden by the options" if requested else ""),
            **resolved.model_dump(mode="json"), "seed": settings.sampling.seed}


def checkout() -> dict[str, Any]:
    """The version, and the git commit when wtb_local runs from a checkout (dirty: uncommitted changes)."""
    from wtb_local.contract.resources import checkout_root
    from wtb_local.engines.environment import package_versions

    record: dict[str, Any] = {"version": package_versions().get("wtb-local"), "git_commit": None}
    root = checkout_root()
    git = shutil.which("git")
    if git is None or root is None or not (root / ".git").exists():
        return record
    try:
        head = subprocess.run([git, "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=False)
        status = subprocess.run([git, "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return record
    if head.returncode == 0:
        record["git_commit"] = head.stdout.strip()
        record["git_dirty"] = bool(status.stdout.strip()) if status.returncode == 0 else None
    return record
