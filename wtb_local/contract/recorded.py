"""A recorded run, as a replay and the commands that compare parsers find it: its result file, its manifest
(read through its model) and the parser it used, with the options that still apply to another parser
(docs/architecture.md, "Two halves and a core"). The replay backend (engines/replay.py), `parsers compare`
and `explain` read a recorded run through these."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wtb_local.contract.manifest import Manifest
from wtb_local.contract.run_dir import ManifestError, RunDir, RunDirError


class ReplayError(ValueError):
    """An unusable replay source; the message names the file (and line and field for a malformed line)."""


def find_result_file(path: str | Path, model_name: str | None = None) -> Path:
    """The result file to replay: `path` itself, or the result file of the run directory `path`
    (`RunDir.result_file`: the only one there, or the one of `model_name` when there are several)."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise ReplayError(f"{path}: no such file or directory (give a run directory or a result file)")
    try:
        return RunDir(path).result_file(model_name)
    except RunDirError as exc:
        raise ReplayError(str(exc)) from None


def recorded_manifest(path: str | Path) -> Manifest | None:
    """The manifest of the run a replay source (run directory or result file) belongs to, read through its
    model (`RunDir.holding`); None when there is none (the replay then goes by its flags alone).
    ReplayError (one line naming the field) when it is unreadable or does not validate: a damaged
    manifest is never read as no manifest."""
    found = RunDir.holding(path)
    try:
        return found.manifest if found is not None else None
    except ManifestError as exc:
        raise ReplayError(str(exc)) from None


def recorded_dataset(manifest: Manifest) -> str | None:
    """The dataset a recorded run read: its file when that is still there, else the name it was given."""
    path = manifest.dataset_path
    if path is not None and Path(path).is_file():
        return path
    return manifest.dataset_source


def recorded_parser(result_file: str | Path) -> tuple[str | None, dict[str, Any]]:
    """The parser the recorded run used and its options (e.g. thinking pre-filled by the template), from
    the manifest of its run directory; (None, {}) when there is no manifest."""
    manifest = recorded_manifest(result_file)
    if manifest is None:
        return None, {}
    return manifest.parser or None, dict(manifest.parser_options)


# Options that describe the prompt, not the parser (whether it pre-filled a reasoning opening): they hold
# for any parser that reads the recorded completions. Other options are the recorded parser's own.
PROMPT_OPTIONS = ("thinking",)


def replay_parser(result_file: str | Path, parser: str | None = None,
                  options: dict[str, Any] | None = None) -> tuple[str | None, dict[str, Any]]:
    """The parser a replay reads the recorded completions with, and its options: `parser` (default: the
    recorded one) with `options` when given, else the recorded options that still apply (all of them for
    the recorded parser, the prompt's (`PROMPT_OPTIONS`) for another one)."""
    recorded, recorded_options = recorded_parser(result_file)
    name = parser or recorded
    if options:
        return name, dict(options)
    if name == recorded:
        return name, dict(recorded_options)
    return name, {k: v for k, v in recorded_options.items() if k in PROMPT_OPTIONS}
