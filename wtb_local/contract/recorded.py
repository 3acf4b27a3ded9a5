"""A recorded run, as a replay and the commands that compare parsers find it: its result file, its manifest
(read through its model) and the parser it used, with the options that still apply to another parser
(docs/architecture.md, "Two halves and a core"). The replay backend (engines/replay.py), `parsers compare`
and `explain` read a recorded run through these."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wtb_local.contract.manifest import Manifest
from wtb_local.contract.paths import RESULT_FILE_NAME, model_dir_name
from wtb_local.contract.run_dir import MANIFEST_NAME, ManifestError, load_manifest


class ReplayError(ValueError):
    """An unusable replay source; the message names the file (and line and field for a malformed line)."""


def find_result_file(path: str | Path, model_name: str | None = None) -> Path:
    """The result file to replay: `path` itself, or `<path>/result/<model>/Wild-Tool-Bench_result.jsonl`
    of a run directory (the only one there, or the one of `model_name` when there are several)."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise ReplayError(f"{path}: no such file or directory (give a run directory or a result file)")
    found = sorted((path / "result").glob(f"*/{RESULT_FILE_NAME}"))
    if len(found) == 1:
        return found[0]
    if not found:
        raise ReplayError(f"{path}: not a run directory (no result/<model>/{RESULT_FILE_NAME})")
    if model_name:
        wanted = path / "result" / model_dir_name(model_name) / RESULT_FILE_NAME
        if wanted in found:
            return wanted
    models = ", ".join(p.parent.name for p in found)
    raise ReplayError(f"{path}: several result files ({models}); give the result file itself")


def recorded_manifest(path: str | Path) -> Manifest | None:
    """The manifest of the run a replay source (run directory or result file) belongs to, read through its
    model; None when there is none or it cannot be read (the replay then goes by its flags alone)."""
    path = Path(path).resolve()
    for candidate in (path, *path.parents[:3]):
        file = candidate / MANIFEST_NAME
        if file.is_file():
            try:
                return load_manifest(file)
            except (OSError, ManifestError):
                return None
    return None


def recorded_dataset(manifest: Manifest) -> str | None:
    """The dataset a recorded run read: its file when that is still there, else the name it was given."""
    path = manifest.dataset_path
    if path is not None and Path(path).is_file():
        return path
    return manifest.dataset_source


def recorded_parser(result_file: str | Path) -> tuple[str | None, dict[str, Any]]:
    """The parser the recorded run used and its options (e.g. thinking pre-filled by the template), from
    the manifest of its run directory; (None, {}) when unknown."""
    try:
        manifest = load_manifest(Path(result_file).resolve().parents[2] / MANIFEST_NAME)
    except (OSError, IndexError, ManifestError):
        return None, {}
    if manifest is None:
        return None, {}
    parser = manifest.extra("parser")
    options = manifest.extra("parser_options")
    return (parser if isinstance(parser, str) and parser else None,
            options if isinstance(options, dict) else {})


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
