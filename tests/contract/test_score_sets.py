"""A run's score sets (contract/score_sets.py): the run's own scoring keeps the run's key, so what earlier
exports wrote is found again; each re-scoring folder is a score set of its own with a key of its own."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from wtb_local.contract.score_sets import ScoreSet, score_set

RUN_KEY = "a" * 64


def test_the_runs_own_scoring_keeps_the_run_key(tmp_path: Path) -> None:
    own = score_set(tmp_path, tmp_path, "release", "strict")
    assert own == ScoreSet("score", "release", "strict", tmp_path)
    assert not own.rescore
    assert own.record_key(RUN_KEY) == RUN_KEY


def test_a_rescoring_is_keyed_by_the_run_its_name_protocol_and_checker(tmp_path: Path) -> None:
    lenient = score_set(tmp_path, tmp_path / "score-lenient", "release", "lenient")
    assert (lenient.name, lenient.rescore) == ("score-lenient", True)
    assert lenient.record_key(RUN_KEY) == hashlib.sha256(
        json.dumps([RUN_KEY, "score-lenient", "release", "lenient"]).encode()).hexdigest()
    strict = score_set(tmp_path, tmp_path / "score-strict", "paper", "strict")
    assert len({RUN_KEY, lenient.record_key(RUN_KEY), strict.record_key(RUN_KEY)}) == 3
    # the same folder reached by another spelling of the run directory is the same score set
    assert score_set(tmp_path / ".", tmp_path / "x" / ".." / "score-lenient", "release", "lenient").name == \
        "score-lenient"
