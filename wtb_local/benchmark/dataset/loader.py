"""Reading a dataset file (or a named one: the embedded sample, the release) into `Session`s."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from wtb_local.benchmark.dataset.errors import DatasetError
from wtb_local.benchmark.dataset.validate import validate_line
from wtb_local.contract.jsonl import json_lines
from wtb_local.contract.resources import DEFAULT_DATASET  # noqa: F401 - re-exported: the commands' one default
from wtb_local.contract.schema import Session

SAMPLE_NAME = "sample"
RELEASE_NAME = "release"
DATASET_NAMES = (SAMPLE_NAME, RELEASE_NAME)


def read_dataset(path: str | Path) -> tuple[list[Session], list[str]]:
    """Validate every line of a JSON-lines file; blank lines are skipped. Returns the sessions and the
    warnings (one line each). Raises `DatasetError` at the first line that breaks the schema."""
    label = str(path)
    if Path(path).is_dir():
        raise DatasetError(label, _directory(Path(path)))
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise DatasetError(label, "no such file") from None
    except OSError as exc:
        raise DatasetError(label, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DatasetError(label, f"not UTF-8 text (byte {exc.start})", line=line) from None
    sessions: list[Session] = []
    warnings: list[str] = []
    for lineno, line_text in json_lines(text):
        session, line_warnings = validate_line(line_text, path=label, line=lineno, position=len(sessions))
        sessions.append(session)
        warnings.extend(line_warnings)
    if not sessions:
        raise DatasetError(label, "empty dataset (no sessions)")
    return sessions, warnings


def resolve_dataset(path_or_name: str | Path | None, *, quiet: bool = False) -> Path:
    """The file behind a dataset argument: `"sample"`, `"release"`/None, or a path.

    The release is fetched into the user cache when absent. When that is impossible (offline, no network,
    a hash mismatch) a `DatasetError` says how to fetch it or to pass `sample`: the 8-session sample is
    never read in its place (a run would print a sample score under the release's name). `quiet` is kept
    for callers that pass it; nothing is printed here."""
    from wtb_local.contract.resources import sample_dataset_path

    if path_or_name is None or (isinstance(path_or_name, str) and path_or_name == RELEASE_NAME):
        return _release()
    if isinstance(path_or_name, str) and path_or_name == SAMPLE_NAME:
        return sample_dataset_path()
    path = Path(path_or_name)
    if path.is_dir():
        raise DatasetError(str(path_or_name), _directory(path))
    if not path.is_file():
        names = ", ".join(DATASET_NAMES)
        raise DatasetError(str(path_or_name), f"no such file (or use a dataset name: {names})")
    return path


def _directory(path: Path) -> str:
    """Why a directory is no dataset, and the JSON-lines files in it that might be."""
    try:
        inside = sorted(p.name for p in path.iterdir() if p.suffix == ".jsonl" and p.is_file())
    except OSError:
        inside = []
    shown = ", ".join(inside[:3]) + (f" and {len(inside) - 3} more" if len(inside) > 3 else "")
    holds = f" (it holds {shown})" if inside else ""
    return (f"a directory, not a dataset file: give the JSON-lines file itself, one session per line{holds}, "
            f"or a dataset name: {', '.join(DATASET_NAMES)}")


def _release() -> Path:
    from wtb_local.benchmark.dataset.fetch import RELEASE_BLOB_SHA1, FetchError, fetch_release, release_path
    from wtb_local.benchmark.dataset.verified import verify_release  # deferred: start-up

    path = release_path()
    if path.is_file():  # verified on every use (cheaply: the verdict is stamped by size and mtime)
        return verify_release(path, RELEASE_BLOB_SHA1)
    try:
        return fetch_release()
    except FetchError as exc:
        # one short line: why, and the two ways on (`data fetch` prints how to place the file by hand)
        raise DatasetError(
            str(path), f"the release dataset is not cached and could not be fetched ({exc.cause}): "
            "`python -m wtb_local data fetch` fetches it (or says how to place it by hand); "
            "`--dataset sample` runs the embedded 8-session sample") from None


def load_dataset(path_or_name: str | Path | None = RELEASE_NAME, *, quiet: bool = False) -> list[Session]:
    """Load and validate a dataset: a path, `"sample"` (the embedded sample) or `"release"`/None (the
    release file in the user cache, fetched when absent, see `wtb_local.benchmark.dataset.fetch`; never replaced by
    the sample). Warnings go to stderr unless `quiet`.
    Raises `DatasetError` (a `ValueError`) with a one-line message naming file, line, session and field."""
    sessions, warnings = read_dataset(resolve_dataset(path_or_name, quiet=quiet))
    if not quiet:
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
    return sessions


def dataset_sha256(path: str | Path) -> str:
    """sha256 of the file's bytes (recorded in run manifests)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()
