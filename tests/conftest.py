"""Test tiers (docs/testing.md): the fast tier is every test without a tier marker, and the pytest config in
pyproject.toml deselects the marked ones unless `-m` names them. A marker on a test or module puts it in its
tier; the tables below add the markers a whole folder or file earns by what it needs, so a test added there
lands in its tier without a decorator."""

from __future__ import annotations

from pathlib import Path

import pytest

# The heavy tiers, in the order CI runs them (each a marker registered in pyproject.toml).
TIERS = ("vllm", "real_model", "cluster", "faults", "wheel", "browser", "export", "slow")

# Path (relative to tests/, a folder ending in "/") -> the tier everything in it needs.
BY_PATH = {
    "slurm/": "cluster",  # a private single-node Slurm cluster, and Ray
    "faults/": "faults",  # kills, signals, full disks against real runs in subprocesses
    "test_wheel_install.py": "wheel",  # builds the sdist and wheel, installs them into a clean venv
    "test_report_html.py": "browser",  # headless Chromium
}

# A fixture -> the tier every test using it needs.
BY_FIXTURE = {
    "real_model_dir": "real_model",  # the trained model, fetched and converted once (tests/real_model/)
}

TESTS = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        where = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else ""
        for prefix, tier in BY_PATH.items():
            if where == prefix or (prefix.endswith("/") and where.startswith(prefix)):
                item.add_marker(tier)
        for fixture, tier in BY_FIXTURE.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(tier)


def pytest_report_header(config: pytest.Config) -> str:
    chosen = config.getoption("markexpr") or "every tier"
    return f"test tier: {chosen} (docs/testing.md; a heavy tier runs with -m, e.g. python -m pytest -m vllm)"
