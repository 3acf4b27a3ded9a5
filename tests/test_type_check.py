"""The type checker's ratchet (docs/testing.md §6, "Type check").

mypy checks the package with the settings in pyproject.toml (`[tool.mypy]`): `contract/`, `analysis/` and
`cli/` with `--strict`'s flags, every other room with mypy's defaults and the checks the file adds. The errors it reports are counted per
room and held to `tests/fixtures/mypy_baseline.json`: a room whose count rises fails with its errors listed,
a room whose count falls fails until the file is lowered to the new count, so the numbers only go down.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASELINE = Path(__file__).parent / "fixtures" / "mypy_baseline.json"
# "wtb_local/formats/parsers/base.py:12: error: ..." -> the room, the first folder below the package
# ("wtb_local" for the package's own top-level modules).
ERROR = re.compile(r"^wtb_local/(?:(?P<room>[a-z_]+)/)?[^:]*:\d+: error: ")


def _errors(report: str) -> list[tuple[str, str]]:
    """(room, line) of each error line of a mypy report."""
    return [(match.group("room") or "wtb_local", line) for line in report.splitlines()
            if (match := ERROR.match(line))]


def _room_counts(report: str) -> Counter[str]:
    return Counter(room for room, _ in _errors(report))


def _run_mypy() -> str:
    # In a subprocess from the checkout's root, so pyproject.toml's [tool.mypy] is the configuration and
    # the incremental cache (.mypy_cache/, ignored by git) makes a repeated run take about a second.
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    if done.returncode not in (0, 1) or not re.search(r"^(Success|Found \d+ error)", done.stdout, re.MULTILINE):
        pytest.fail(f"mypy did not finish its check (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout


def test_the_error_count_of_each_room_only_goes_down() -> None:
    baseline: dict[str, int] = json.loads(BASELINE.read_text(encoding="utf-8"))
    report = _run_mypy()
    counts = _room_counts(report)
    grown = {room: (count, baseline.get(room, 0)) for room, count in counts.items() if count > baseline.get(room, 0)}
    if grown:
        lines = [line for room, line in _errors(report) if room in grown]
        pytest.fail(f"mypy errors grew (room: found, allowed) {grown}; fix them:\n" + "\n".join(lines))
    shrunk = {room: (counts.get(room, 0), left) for room, left in baseline.items() if counts.get(room, 0) < left}
    assert shrunk == {}, f"fewer mypy errors than {BASELINE.name} allows (room: found, allowed): lower the file"


def test_the_room_counter_reads_mypy_lines() -> None:
    report = ("wtb_local/formats/parsers/base.py:12: error: Incompatible types  [assignment]\n"
              "wtb_local/formats/rendering/x.py:3: note: See here\n"
              "wtb_local/contract/jsonl.py:1: error: Missing  [type-arg]\n"
              "wtb_local/__main__.py:5: error: Name \"x\" is not defined  [name-defined]\n"
              "Found 3 errors in 3 files (checked 9 source files)\n")
    assert _room_counts(report) == {"formats": 1, "contract": 1, "wtb_local": 1}


# The rooms checked with every strict flag: the contract and the reader half.
STRICT_ROOMS = ("contract", "analysis", "cli")


def test_the_contract_and_the_reader_half_are_checked_with_every_strict_flag() -> None:
    from mypy.main import define_options  # mypy is in the dev extras, as pytest is: no skip
    from mypy.options import PER_MODULE_OPTIONS

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    contract = [o for o in config["overrides"] if "wtb_local.contract.*" in o["module"]]
    assert len(contract) == 1, "one [[tool.mypy.overrides]] for wtb_local.contract.*"
    assert sorted(contract[0]["module"]) == sorted(f"wtb_local.{room}{tail}" for room in STRICT_ROOMS
                                                   for tail in ("", ".*"))
    strict = dict(define_options()[2])
    per_module = {flag: value for flag, value in strict.items() if flag in PER_MODULE_OPTIONS}
    assert {flag: contract[0].get(flag) for flag in per_module} == per_module
    # The few global-only strict flags hold for the whole package.
    assert {flag: config.get(flag) for flag in strict if flag not in per_module} == \
        {flag: value for flag, value in strict.items() if flag not in per_module}
    assert "strict" not in contract[0], "`strict = true` in an override applies to every module"
