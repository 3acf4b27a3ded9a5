"""The test tiers (docs/testing.md): one list of heavy tiers in pyproject.toml's default selection, its
registered markers, tests/conftest.py and .ci/run; plain pytest deselects a heavy test and `-m` brings it
back; the folders, files and fixtures tests/conftest.py marks."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import BY_FIXTURE, BY_PATH, SLOW, TIERS

ROOT = Path(__file__).resolve().parents[1]
PYTEST = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]


def test_the_default_selection_leaves_out_exactly_the_heavy_tiers() -> None:
    args = shlex.split(PYTEST["addopts"])
    expression = args[args.index("-m") + 1]
    assert expression == "not (" + " or ".join(TIERS) + ")"
    registered = {line.split(":", 1)[0] for line in PYTEST["markers"]}
    assert set(TIERS) <= registered
    assert set(BY_PATH.values()) | set(BY_FIXTURE.values()) <= set(TIERS)
    for path in BY_PATH:
        assert (ROOT / "tests" / path).exists(), path


def test_ci_runs_every_heavy_tier() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    (heavy,) = re.findall(r"^HEAVY=\(([^)]*)\)$", ci, flags=re.MULTILINE)
    assert sorted(heavy.split()) == sorted(TIERS)
    assert "--durations=25" in ci
    # each heavy tier is run by a line of its own, in one of the two lanes or the export stage
    called = re.findall(r"^\s*heavy (\w+)", ci, flags=re.MULTILINE)
    called += re.findall(r"^\s*(?:\w+=\S+ )*tier (\w+) ", ci, flags=re.MULTILINE)
    assert sorted(set(called) & set(TIERS)) == sorted(TIERS)
    assert len(called) == len(set(called)), "a tier run twice"


def _collected(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=100, check=False)
    assert done.returncode in (0, 5), done.stdout + done.stderr  # 5: every test deselected
    return sorted(line for line in done.stdout.splitlines() if "::" in line)


@pytest.mark.slow  # three pytest collections in subprocesses
def test_plain_pytest_deselects_a_heavy_file_and_its_marker_selects_it() -> None:
    wheel = ["tests/test_wheel_install.py::test_the_installed_wheel_runs_the_quickstart_from_outside_the_checkout",
             "tests/test_wheel_install.py::test_the_sdist_and_the_wheel_carry_the_shipped_files",
             "tests/test_wheel_install.py::test_the_wheel_runs_as_a_zip"]
    assert _collected("tests/test_wheel_install.py") == []
    assert _collected("-m", "wheel", "tests/test_wheel_install.py") == wheel
    assert _collected("-m", "", "tests/test_wheel_install.py") == wheel


def test_every_test_measured_slow_is_still_there() -> None:
    """A renamed or moved test leaves its SLOW entry naming nothing: the entry must follow it."""
    for name in SLOW:
        path, *_, function = name.split("::")
        assert f"def {function}(" in (ROOT / "tests" / path).read_text(encoding="utf-8"), name
