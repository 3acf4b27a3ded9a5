"""Where the project's shipped folders live.

`data/` (the embedded sample dataset) and `chat_templates/` sit at the repository root next to the
`wtb_local/` package; the project is installed editable, so they are found relative to this file.
"""

from __future__ import annotations

from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent

SAMPLE_FILE_NAME = "sample.jsonl"


def project_root() -> Path:
    """The repository root (the folder holding `wtb_local/`, `data/` and `chat_templates/`)."""
    return _ROOT


def data_dir() -> Path:
    """The shipped `data/` folder (the sample dataset and its README)."""
    return _ROOT / "data"


def chat_templates_dir() -> Path:
    """The shipped `chat_templates/` folder (`NAME.jinja` files)."""
    return _ROOT / "chat_templates"


def sample_dataset_path() -> Path:
    """The embedded sample dataset, `data/sample.jsonl`."""
    return data_dir() / SAMPLE_FILE_NAME
