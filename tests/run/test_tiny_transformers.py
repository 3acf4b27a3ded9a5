"""The whole pipeline on a tiny random-weight model through the transformers backend (waves)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.run.conftest import invoke, run_files, without_timing

pytest.importorskip("transformers", reason="transformers is not installed (pip install -e .[hf])")


def _args(model_dir: Path, out: Path) -> list[str]:
    return [
        "--backend",
        "transformers",
        "--model",
        str(model_dir),
        "--model-name",
        "tiny",
        "--dataset",
        "sample",
        "--limit",
        "2",
        "--max-new-tokens",
        "8",
        "--batch-size",
        "8",
        "--out",
        str(out),
        "--progress",
        "none",
    ]


def test_tiny_model_pipeline_is_complete_and_reproducible(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    first = invoke(_args(qwen_tiny_dir, tmp_path / "a"))
    assert first.exit_code == 0, first.output
    second = invoke(_args(qwen_tiny_dir, tmp_path / "b"))
    assert second.exit_code == 0, second.output
    a, b = run_files(tmp_path / "a", "tiny"), run_files(tmp_path / "b", "tiny")
    assert without_timing(a) == without_timing(b)  # same seed: same raw completions, verdicts and files

    assert [r["id"] for r in a["result"]] == ["wild_tool_bench_0", "wild_tool_bench_1"]
    tasks = [task for row in a["result"] for task in row["result"]]
    assert len(tasks) == 8 and all(t["action_name_label"] in ("correct", "error") for t in tasks)
    steps = [
        s["inference_output"] for t in tasks for k, s in t["inference_log"].items() if k.startswith("step_")
    ]
    assert all(isinstance(s["raw"], str) and s["finish_reason"] in ("stop", "length") for s in steps)
    assert all(sum(t["output_token_count"]) > 0 and sum(t["input_token_count"]) > 0 for t in tasks)
    assert a["metric"]["total_info"]["task"]["total_count"] == 8
    assert len(a["score"]) == 2

    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["scheduling"] == "waves"
    assert manifest["parser"] == "hermes"
    assert manifest["template"]["source"] == "tokenizer" and len(manifest["template"]["sha256"]) == 64
    assert manifest["backend"]["backend"] == "transformers"
    assert manifest["invocations"][0]["generated_tokens"] > 0
    assert manifest["config"]["template_sha256"] == manifest["template"]["sha256"]
