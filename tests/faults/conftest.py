"""Fixtures the fault tests share with tests/run/: the tiny Qwen2.5-template model a sampling backend needs."""

from tests.run.conftest import qwen_tiny_dir  # noqa: F401  (a fixture, found by name)
