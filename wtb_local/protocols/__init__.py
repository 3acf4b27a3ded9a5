"""Evaluation protocols: `release` (the benchmark's released evaluator, bit for bit) and `paper` (how the
paper's open-model numbers were produced by the authors' older harness, paper-harness.md §1-3).

Modules: `lenient` (the harness's argument checker), `dates` (date extraction and placement),
`history` (conversation building and the paper step loop), `families` (per-family prompt, generation and
tool-result rules), `parse_rules` (per-family parse rules), `harness_scoring` (argument verdicts, AP/OP and
multi-tool buckets as the harness computes them), `setup` (wiring a run to a protocol).
"""

from __future__ import annotations

PROTOCOLS = ("release", "paper")
# The argument checker each protocol scores with (rescore can apply the other one).
DEFAULT_CHECKER = {"release": "strict", "paper": "lenient"}
CHECKERS = ("strict", "lenient")
