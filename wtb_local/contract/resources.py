"""Where the project's shipped files are, from a checkout, an installed wheel or a zip import.

`chat_templates/` (the template overrides) and `data/` (the embedded sample) live at the repository root,
their documented place; the build ships them inside the package as `wtb_local/chat_templates/` and
`wtb_local/data/` (setup.py). A checkout reads its own root folders (an edit there takes effect at once);
anything else reads the package's copies through `importlib.resources`, which also serves a zip or a
wheel on `sys.path`. Every read of these files goes through this module (docs/install.md §2).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

SAMPLE_FILE_NAME = "sample.jsonl"
# The one default dataset of `run`, `score` and `data stats` (here, not in wtb_local.benchmark.dataset, so that the
# CLI's `--help` does not import the validator): the paper's numbers are over the release, and a default
# that differed per command would score a run against another file than the one it ran on.
DEFAULT_DATASET = "release"

_PACKAGE = "wtb_local"
_SHIPPED = ("chat_templates", "data")
_PROJECT_NAME = 'name = "wtb-local"'


@cache
def checkout_root() -> Path | None:
    """The repository root when wtb_local runs from a checkout of this project (its pyproject.toml and
    shipped folders next to the package), else None (an installed wheel, a zip)."""
    root = Path(__file__).resolve().parents[2]  # wtb_local/contract/ -> the root
    try:
        pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    if _PROJECT_NAME not in pyproject or not all((root / folder).is_dir() for folder in _SHIPPED):
        return None
    return root


def project_root() -> Path:
    """The folder holding the `wtb_local/` package: the repository root in a checkout, where `slurm/`
    lives (`checkout_root()` says whether it is one); site-packages for an installed wheel."""
    return Path(__file__).resolve().parents[2]


def package_file(*parts: str) -> Traversable:
    """A file shipped inside the package (`package_file("analysis", "reports", "browser.css")`)."""
    found = files(_PACKAGE)
    for part in parts:
        found = found / part
    return found


def _shipped(folder: str) -> Traversable:
    root = checkout_root()
    return root / folder if root is not None else package_file(folder)


def data_dir() -> Traversable:
    """The shipped `data/` folder (the sample dataset and its README)."""
    return _shipped("data")


def chat_templates_dir() -> Traversable:
    """The shipped `chat_templates/` folder (`NAME.jinja` files)."""
    return _shipped("chat_templates")


def cache_dir() -> Path:
    """`$WTB_CACHE_DIR`, else `$XDG_CACHE_HOME/wtb_local`, else `~/.cache/wtb_local`."""
    explicit = os.environ.get("WTB_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "wtb_local"
    return Path.home() / ".cache" / "wtb_local"


def sample_dataset_path() -> Path:
    """The embedded sample dataset, `data/sample.jsonl`, as a file on disk (runs record and hash its
    path). Imported from a zip, the bytes are copied once into the cache, named by their sha256."""
    sample = data_dir() / SAMPLE_FILE_NAME
    if isinstance(sample, Path):
        return sample
    return _on_disk(sample.read_bytes(), SAMPLE_FILE_NAME)


def _on_disk(content: bytes, name: str) -> Path:
    folder = cache_dir() / "shipped" / hashlib.sha256(content).hexdigest()[:16]
    path = folder / name
    if path.is_file() and path.read_bytes() == content:
        return path
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{name}.", delete=False) as handle:
        handle.write(content)
    os.replace(handle.name, path)  # atomic: a concurrent reader sees the whole file or none
    return path
