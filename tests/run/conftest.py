"""Shared helpers for the runner tests: the CLI, the vectors, tiny models, and file comparisons."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VECTORS = FIXTURES / "vectors" / "sessions"
TEMPLATES = FIXTURES / "runner" / "chat_templates.json"
RESULT_NAME = "Wild-Tool-Bench_result.jsonl"
SCORE_NAME = "Wild-Tool-Bench_score.jsonl"
METRIC_NAME = "Wild-Tool-Bench_metric.json"
# Keys whose values are wall-clock measurements or depend on request timing (what the prefix cache held
# when a request arrived): they differ between otherwise identical runs.
TIMING_KEYS = frozenset({"latency", "runner_ms", "cached_tokens"})


def invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    """`python -m wtb_local run ARGS` in-process (stderr kept apart from stdout)."""
    from wtb_local.cli import cli

    return CliRunner().invoke(cli, ["run", *args], env=env, catch_exceptions=False)


def scripted_args(out: Path, *extra: str) -> list[str]:
    return [
        "--backend",
        "scripted",
        "--script",
        str(VECTORS / "script.jsonl"),
        "--dataset",
        str(VECTORS / "dataset.jsonl"),
        "--model-name",
        "scripted",
        "--out",
        str(out),
        "--progress",
        "none",
        *extra,
    ]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_files(out: Path, model_dir: str) -> dict[str, Any]:
    """The result, score and metric files of a run directory, parsed."""
    return {
        "result": read_jsonl(out / "result" / model_dir / RESULT_NAME),
        "score": read_jsonl(out / "score" / model_dir / SCORE_NAME),
        "metric": json.loads((out / "score" / model_dir / METRIC_NAME).read_text(encoding="utf-8")),
    }


def without_timing(value: Any) -> Any:
    """A copy with wall-clock fields removed, for comparing reruns."""
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def chat_template(model_id: str) -> str:
    return json.loads(TEMPLATES.read_text(encoding="utf-8"))[model_id]["chat_template"]


@pytest.fixture(scope="session")
def qwen_tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-weight tiny model with Qwen2.5's real chat template (hermes tool calls); a context long
    enough for the sample's prompts (a few thousand tiny-vocabulary tokens)."""
    from tests.helpers import build_tiny_model

    return build_tiny_model(
        tmp_path_factory.mktemp("runner-tiny") / "qwen",
        chat_template("Qwen/Qwen2.5-7B-Instruct"),
        special_tokens=["<tool_call>", "</tool_call>"],
        max_position_embeddings=8192,
    )
