"""Where the project's shipped folders live.

`data/` (the embedded sample dataset) and `chat_templates/` sit at the repository root next to the
`wtb_local/` package; the project is installed editable, so they are found relative to this file.
"""

from __future__ import annotations

from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent

SAMPLE_FILE_NAME = "sample.jsonl"
# The one default dataset of `run`, `score` and `data stats` (here, not in wtb_local.dataset, so that the
# CLI's `--help` does not import the validator): the paper's numbers are over the release, and a default
# that differed per command would score a run against another file than the one it ran on.
DEFAULT_DATASET = "release"


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
