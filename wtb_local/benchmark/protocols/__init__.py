"""Evaluation protocols: `release` (the benchmark's released evaluator, bit for bit) and `paper` (how the
paper's open-model numbers were produced by the authors' older harness, docs/evaluation.md).

Each protocol is one object (`base.Protocol`; `release.py`, `paper.py`), found by name in `registry.py`; `checkers.py` scores with either argument checker.
The paper protocol's parts: `lenient` (the harness's argument checker), `dates` (date extraction and
placement), `history` (conversation building and the paper step loop), `families` (per-family prompt,
generation and tool-result rules), `parse_rules` (per-family parse rules), `harness_scoring` (argument
verdicts, AP/OP and multi-tool buckets as the harness computes them), `setup` (its renderer and per-run setup).
"""

from __future__ import annotations

from wtb_local.benchmark.protocols.checkers import CHECKERS, score_with
from wtb_local.benchmark.protocols.registry import (
    default_scoring,
    find_protocol,
    protocol_named,
    protocol_names,
)

__all__ = ["CHECKERS", "default_scoring", "find_protocol", "protocol_named", "protocol_names", "score_with"]
