"""A run's score sets: the scoring the run itself wrote (`RUN/score/`) and each re-scoring `rescore` added
(`RUN/score-<checker>/`, holding its own `score/<model>/` files and a manifest that names its checker). A
score set is a record of its own: what an export writes for it (an Inspect log, an MLflow run) is keyed by
the run's key and, for a re-scoring, by the score set's identity, so the run's record and its re-scoring's
never share a file or a tracking run (docs/exports.md, "A run and its score sets").

Kept to one function the run-directory object can take over: it knows the folder names, nothing else.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

OWN = "score"  # the run's own scoring: `RUN/score/<model>/...`


@dataclass(frozen=True)
class ScoreSet:
    """Which scoring of a run a record holds: its name (`score`, `score-lenient`), the protocol and checker
    that produced it, and the folder that holds its `score/<model>/` files."""

    name: str
    protocol: str
    checker: str
    folder: Path

    @property
    def rescore(self) -> bool:
        """A re-scoring added by `rescore`, not the run's own scoring."""
        return self.name != OWN

    def record_key(self, run_key: str) -> str:
        """The record's stable key: the run's own scoring keeps the run's key (what earlier exports used),
        a re-scoring's is sha256 of the run's key, its name, protocol and checker."""
        if not self.rescore:
            return run_key
        identity = json.dumps([run_key, self.name, self.protocol, self.checker])
        return hashlib.sha256(identity.encode()).hexdigest()


def score_set(run_dir: str | Path, scored: str | Path, protocol: str, checker: str) -> ScoreSet:
    """The score set whose files lie under `scored` (the folder holding `score/<model>/`): the run's own
    when it is the run directory, else the re-scoring folder's name relative to it (`score-lenient`)."""
    run_dir, scored = Path(run_dir), Path(scored)
    if scored.resolve() == run_dir.resolve():
        return ScoreSet(OWN, protocol, checker, scored)
    try:
        name = scored.resolve().relative_to(run_dir.resolve()).as_posix()
    except ValueError:  # a loose score file named directly: its folder's name
        name = scored.name
    return ScoreSet(name, protocol, checker, scored)


__all__ = ["OWN", "ScoreSet", "score_set"]
