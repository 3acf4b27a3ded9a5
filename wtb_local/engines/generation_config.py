"""A checkpoint's generation_config.json, read without loading the model.

The in-process backends read it from the loaded model (vLLM: `try_get_generation_config`; transformers:
`model.generation_config`); server mode has no model in process, so it reads the same file from the local
model directory or the hub (cache first, honouring HF_HOME and HF_HUB_OFFLINE) and resolves the same
sampling from it. A checkpoint without the file means transformers' defaults (greedy), as it does for the
engines; a file that exists but cannot be read stops the run, since the sampling would be guessed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FILE_NAME = "generation_config.json"


class GenerationConfigError(RuntimeError):
    """The generation config could not be read (unreachable hub, malformed file)."""


def read_generation_config(model: str, revision: str | None = None) -> dict[str, Any]:
    """The file's JSON object; `{}` when the checkpoint has none."""
    local = Path(model).expanduser()
    if local.is_dir():
        path = local / FILE_NAME
        return _parse(path) if path.is_file() else {}
    fetched = _hub_file(model, revision)
    return _parse(fetched) if fetched is not None else {}


def _hub_file(model: str, revision: str | None) -> Path | None:
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    cached = try_to_load_from_cache(model, FILE_NAME, revision=revision)
    if isinstance(cached, str):
        return Path(cached)
    if cached is not None:  # the hub said earlier that the file does not exist (cached "no such file")
        return None
    try:
        return Path(hf_hub_download(model, FILE_NAME, revision=revision))
    except LocalEntryNotFoundError as exc:  # offline or unreachable: we cannot know the model's defaults
        raise GenerationConfigError(f"{model}: cannot read {FILE_NAME} ({_one_line(exc)}); download the "
                                    "model's files into the hub cache first, or pass a local directory") from None
    except EntryNotFoundError:  # checked last: the local variant above is a subclass
        return None
    except Exception as exc:  # noqa: BLE001 - hub errors (gated, missing repo) all mean "cannot read"
        raise GenerationConfigError(f"{model}: cannot read {FILE_NAME} ({_one_line(exc)})") from None


def _parse(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GenerationConfigError(f"{path}: unreadable {FILE_NAME} ({_one_line(exc)})") from None
    if not isinstance(data, dict):
        raise GenerationConfigError(f"{path}: {FILE_NAME} is not a JSON object")
    return data


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]
