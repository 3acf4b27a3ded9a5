"""The tree passes ruff (pinned in `.[dev]`, its default rules with pyproject.toml's `[tool.ruff]`): what it flags
is a name defined twice, an import never used, a string joined where a comma was meant (docs/testing.md §6)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_tests_and_scripts_pass_ruff() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "wtb_local", "tests", "scripts"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
