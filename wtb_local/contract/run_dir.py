"""A run directory as one object (`RunDir`), the one reader of its manifest, and the manifest's one writer
(docs/architecture.md, "The run directory"; docs/files.md).

`RunDir.find(path)` takes any path a user gives (the folder, its manifest, its result, score or metric
file, a re-scoring's folder or files, a `repeats/<r>` or `shards/<I>-of-<N>` folder, each a run directory
of its own) and knows every path inside (contract/paths.py). Its manifest is read through its model
(contract/manifest.py, sections in contract/sections.py): one that is not JSON or does not validate is
refused in one line naming the field, by every reader alike. Its rows are read by the one rule for damaged
records (contract/rows.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wtb_local.contract.manifest import READABLE_VERSIONS, Manifest
from wtb_local.contract.paths import (
    MANIFEST_NAME,
    METRIC_FILE_NAME,
    REPEATS_DIR,
    REPEATS_JSON,
    RESCORE_PREFIX,
    RESULT_DIR,
    RESULT_FILE_NAME,
    RUN_FILE_NAMES,
    SCORE_DIR,
    SCORE_FILE_NAME,
    RunPaths,
    model_dir_name,
)
from wtb_local.contract.rows import RESULT_KEYS, SCORE_KEYS, SessionView, read_sessions
from wtb_local.contract.shard_dirs import SHARDS_DIR, parse_shard_dir


class ManifestError(ValueError):
    """A manifest that cannot be read or does not validate; the message is one line naming the field."""


class ManifestUnreadable(ManifestError):
    """A manifest that is not JSON at all (a reader may treat the folder as one without a manifest)."""


def check_manifest(data: Any, path: str | Path) -> Manifest:
    """`data` (a parsed manifest.json) as its model; ManifestError naming the first field that is wrong."""
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: not a run manifest (a JSON {type(data).__name__}, not an object)")
    version = data.get("schema_version", 1)
    if isinstance(version, int) and not isinstance(version, bool) and version not in READABLE_VERSIONS:
        raise ManifestError(f"{path}: schema_version {version}: written by another wtb_local (this one reads "
                            f"versions {', '.join(map(str, READABLE_VERSIONS))}); read it with the version that "
                            "wrote it")
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        got = json.dumps(error.get("input"), ensure_ascii=False, default=str)
        got = got if len(got) <= 40 else got[:37] + "..."
        what = "expected an object" if error["type"] in ("model_type", "dict_type") else error["msg"].lower()
        raise ManifestError(f"{path}: field {where}: {what} (got {got})") from None


def as_manifest(value: Manifest | dict[str, Any] | None) -> Manifest | None:
    """A manifest a run built in memory (a dict, validated at every write) or one read, as its model."""
    if value is None or isinstance(value, Manifest):
        return value
    return check_manifest(value, MANIFEST_NAME)


def load_manifest(path: str | Path) -> Manifest | None:
    """The manifest at `path` (a manifest.json or its run directory) as its model; None when there is
    none. ManifestError (one line) when it is not JSON or does not validate. Every reader reads it so."""
    read = _read(path)
    return None if read is None else read[1]


def load_manifest_data(path: str | Path) -> dict[str, Any] | None:
    """The manifest at `path`, checked against its model, as the dict it is: for the writers that update
    it (resume, merge, rescore) and write it back byte for byte (docs/architecture.md)."""
    read = _read(path)
    return None if read is None else read[0]


def _read(path: str | Path) -> tuple[dict[str, Any], Manifest] | None:
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ManifestUnreadable(f"{path}: unreadable run manifest ({' '.join(str(exc).split())})") from None
    manifest = check_manifest(data, path)  # an object, or refused
    return data, manifest


def write_manifest(run_dir: str | Path, manifest: dict[str, Any]) -> Path:
    """Atomic write (temporary file + rename) so a killed run never leaves half a manifest."""
    path = Path(run_dir) / MANIFEST_NAME
    check_manifest(manifest, path)  # written only as its model allows (manifest.py)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return path


class RunDirError(ValueError):
    """A path that is not (in) a run directory, or one whose files cannot be told apart; one line."""


@dataclass(frozen=True)
class ScoreSet:
    """One scoring of a run: its own (`checker` None: the checker its protocol records) or a re-scoring
    with `rescore --checker C` (`score-C/`, a run directory of its own with a manifest saying so)."""

    checker: str | None
    root: Path  # the folder holding score/<model>/ and (for a re-scoring) its own manifest.json
    score_file: Path
    metric_file: Path

    @property
    def rescored(self) -> bool:
        return self.checker is not None


@dataclass(frozen=True)
class RunDir:
    """A run directory: `root` holds manifest.json, result/<model>/ and score/<model>/."""

    root: Path

    @classmethod
    def find(cls, path: str | Path) -> RunDir | None:
        """The run directory `path` is or belongs to; None for a loose file outside any run directory. A
        folder is taken as a run directory (a harness output folder, a repeat, a shard, a re-scoring);
        a file names its run directory by where it lies."""
        path = Path(path)
        if path.is_dir():
            return cls(path)
        if path.name == MANIFEST_NAME:
            return cls(path.parent)
        if path.name in RUN_FILE_NAMES and path.parent.parent.name in (RESULT_DIR, SCORE_DIR):
            return cls(path.parent.parent.parent)
        return None

    @classmethod
    def holding(cls, path: str | Path) -> RunDir | None:
        """The run directory with a manifest that `path` is or belongs to (`find`, kept only when its
        manifest.json exists): what `score` and a replay check a file against."""
        found = cls.find(path)
        return found if found is not None and found.manifest_file.is_file() else None

    # paths
    @property
    def manifest_file(self) -> Path:
        return self.root / MANIFEST_NAME

    def paths(self, model_name: str) -> RunPaths:
        return RunPaths(self.root, model_name)

    @property
    def is_rescoring(self) -> bool:
        """A `score-<checker>` folder of a run (its manifest's `protocol.rescore_of` names the run)."""
        return self.root.name.startswith(RESCORE_PREFIX) and (self.root.parent / MANIFEST_NAME).is_file()

    def model_dirs(self, folder: str = RESULT_DIR, name: str = RESULT_FILE_NAME) -> list[str]:
        """The `<model>` folders that hold `folder/<model>/name`, sorted."""
        return sorted(p.parent.name for p in (self.root / folder).glob(f"*/{name}"))

    def result_file(self, model_name: str | None = None) -> Path:
        """The run's result file: the only one, or `model_name`'s when there are several. RunDirError
        (one line) when there is none or several and no model names one."""
        found = self.model_dirs()
        if not found:
            raise RunDirError(f"{self.root}: not a run directory (no {RESULT_DIR}/<model>/{RESULT_FILE_NAME})")
        if model_name and model_dir_name(model_name) in found:
            return self.paths(model_dir_name(model_name)).result_file
        if len(found) == 1:
            return self.root / RESULT_DIR / found[0] / RESULT_FILE_NAME
        raise RunDirError(f"{self.root}: several result files ({', '.join(found)}); give the result file itself")

    def unfinished_repeats(self) -> str | None:
        """The one line every reader gives for a `run --repeats` folder stopped before all its repeats ran
        (`repeats/<r>/` but no repeats.json): none reads its first repeat as if it were the run."""
        if (self.root / REPEATS_JSON).is_file() or self.manifest_file.is_file():
            return None
        repeats = self.repeats()
        if not repeats:
            return None
        return (f"{self.root}: a `run --repeats` folder whose repeats did not all run ({len(repeats)} recorded in "
                f"{self.root / REPEATS_DIR}, no {REPEATS_JSON}); rerun the same `run --repeats` command to finish "
                f"it, or give one repeat's folder ({repeats[0].root})")

    def score_sets(self) -> list[ScoreSet]:
        """The run's own scoring and each re-scoring (`score-<checker>/`), each a record of its own."""
        sets = [ScoreSet(None, self.root, self.root / SCORE_DIR / m / SCORE_FILE_NAME,
                         self.root / SCORE_DIR / m / METRIC_FILE_NAME)
                for m in self.model_dirs(SCORE_DIR, METRIC_FILE_NAME)]
        for folder in sorted(self.root.glob(f"{RESCORE_PREFIX}*")):
            for m in RunDir(folder).model_dirs(SCORE_DIR, METRIC_FILE_NAME):
                sets.append(ScoreSet(folder.name[len(RESCORE_PREFIX):], folder,
                                     folder / SCORE_DIR / m / SCORE_FILE_NAME, folder / SCORE_DIR / m / METRIC_FILE_NAME))
        return sets

    def repeats(self) -> list[RunDir]:
        """The repeats of a `--repeats K` run (`repeats/<r>/`), in order."""
        found = [p for p in (self.root / REPEATS_DIR).glob("*") if p.is_dir() and p.name.isdigit()]
        return [RunDir(p) for p in sorted(found, key=lambda p: int(p.name))]

    def shards(self) -> list[RunDir]:
        """The shards of a `--shard` run (`shards/<I>-of-<N>/`)."""
        return [RunDir(p) for p in sorted((self.root / SHARDS_DIR).glob("*"))
                if p.is_dir() and parse_shard_dir(p.name) is not None]

    # contents
    @cached_property
    def manifest(self) -> Manifest | None:
        """The manifest through its model; None when there is none. ManifestError (one line) when it is
        not JSON or does not validate: every reader refuses such a run the same way."""
        return load_manifest(self.manifest_file)

    def sessions(self, model_name: str | None = None, notes: list[str] | None = None) -> list[SessionView]:
        """The result file's session rows as read-only views, by the rule for damaged records
        (contract/rows.py): an incomplete last line dropped with its note in `notes`, RowError for a
        foreign or duplicated row."""
        return read_sessions(self.result_file(model_name), notes, RESULT_KEYS)

    def scores(self, score_set: ScoreSet | None = None, notes: list[str] | None = None) -> list[SessionView]:
        """The scored sessions of one score set (default: the run's own, the only one there) as read-only
        views, by the same rule. RunDirError when the run has no such score file."""
        if score_set is None:
            own = [s for s in self.score_sets() if not s.rescored]
            if len(own) != 1:
                raise RunDirError(f"{self.root}: {'no' if not own else 'several'} {SCORE_DIR}/<model>/{SCORE_FILE_NAME}")
            score_set = own[0]
        return read_sessions(score_set.score_file, notes, SCORE_KEYS)
