"""The runner tests' tiny Qwen2.5-template model (hermes tool calls), shared with the Slurm test."""

from tests.run.conftest import qwen_tiny_dir  # noqa: F401 - a fixture, re-exported for pytest
