"""The model's prompt renderer (its tokenizer and chat template) as a run loads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wtb_local.contract.errors import RunError
from wtb_local.formats.rendering.templates import TemplateError, tokenizer_on_disk

__all__ = ["load_renderer", "local_config", "tokenizer_on_disk"]


def load_renderer(model: str | None, *, revision: str | None = None, trust_remote_code: bool = False,
                  chat_template: str | None = None, template_kwargs: dict[str, Any] | None = None,
                  parser: str | None = None, local_only: bool = False) -> Any:
    """The model's prompt renderer; `local_only`: from a local directory or the hub cache, no network."""
    from wtb_local.formats.rendering.renderer import PromptRenderer  # deferred: start-up

    if not model:
        raise RunError("--model is needed to load the tokenizer")
    kwargs = dict(template_kwargs or {})
    if not local_only:
        try:
            return PromptRenderer.from_pretrained(model, revision=revision, trust_remote_code=trust_remote_code,
                                                  chat_template=chat_template, template_kwargs=kwargs,
                                                  parser=parser)
        except TemplateError:
            raise
        except Exception as exc:  # noqa: BLE001 - hub, file and tokenizer errors all mean "no tokenizer"
            # transformers' messages span several lines; the CLI's errors are one line.
            raise RunError(f"--model {model}: cannot load the tokenizer: {' '.join(str(exc).split())}") from None
    return PromptRenderer.from_local(model, revision=revision, trust_remote_code=trust_remote_code,
                                     chat_template=chat_template, template_kwargs=kwargs, parser=parser)


def local_config(model: str | None) -> dict[str, Any] | None:
    """config.json of a local model directory (the parser choice reads its architecture)."""
    if not model:
        return None
    path = Path(model) / "config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, json.JSONDecodeError):
        return None
