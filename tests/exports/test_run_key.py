"""The export key of a run (docs/exports.md, "Exporting twice updates, never duplicates"): the same run moved
elsewhere keeps its key; a second run of the same configuration started in the same second, in another
folder, gets another key (the two would otherwise overwrite each other's Inspect log and MLflow run)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.exports.runs import oracle_demo
from wtb_local.analysis.exports.source import load_export_runs


def _key(path: Path) -> str:
    (run,) = load_export_runs([str(path)])
    return run.key


def test_a_moved_run_keeps_its_key_and_a_same_second_twin_gets_another(tmp_path: Path) -> None:
    demo = oracle_demo(tmp_path, limit=1)
    key = _key(demo)
    assert len(key) == 64
    moved = tmp_path / "elsewhere" / demo.name
    shutil.copytree(demo, moved)
    assert _key(moved) == key
    twin = tmp_path / "runs" / "oracle-demo-again"  # the same manifest: same config hash, same start second
    shutil.copytree(demo, twin)
    assert (twin / "manifest.json").read_bytes() == (demo / "manifest.json").read_bytes()
    assert _key(twin) != key
