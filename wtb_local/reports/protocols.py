"""Protocol labels for report rows, and the rows of a run's re-scorings (`rescore`): one run shown as
release-strict and release-lenient (or paper-lenient and paper-strict), so a gap to the paper splits into
the checker's part and the prompt/generation part."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PAPER_PROTOCOL_NOTE = ("the paper's open-model rows come from the authors' older harness (per-family prompts, "
                       "transformers generate, lenient argument checker): --protocol paper reproduces it")


def paper_row_note(protocol: str) -> str:
    """The line printed under the paper's row by the main job."""
    return f"note: this run: --protocol {protocol}; {PAPER_PROTOCOL_NOTE}."


def run_protocol(run_dir: str | Path) -> tuple[str, str]:
    """(protocol, checker) of a run directory from its manifest; a run without the key is release/strict."""
    path = Path(run_dir) / "manifest.json"
    try:
        section = json.loads(path.read_text(encoding="utf-8")).get("protocol") or {}
    except (OSError, ValueError, AttributeError):
        section = {}
    return str(section.get("name", "release")), str(section.get("checker", "strict"))


def rescored_metrics(run_dir: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """(checker, metric) of every `score-<checker>/<model>/Wild-Tool-Bench_metric.json` in a run directory."""
    found = []
    for path in sorted(Path(run_dir).glob("score-*/*/Wild-Tool-Bench_metric.json")):
        checker = path.parent.parent.name[len("score-"):]
        found.append((checker, json.loads(path.read_text(encoding="utf-8"))))
    return found


def protocol_label(name: str, protocol: str, checker: str) -> str:
    """`model [release-strict]`: every report row says which protocol and checker produced it."""
    return f"{name} [{protocol}-{checker}]"
