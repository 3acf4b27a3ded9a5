"""What a rerun with the same seed reproduces (docs/reproducibility.md §1): replay byte for byte (the
per-step runner_ms timing aside), and the claim each run records in its manifest (`rerun`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from wtb_local.engines import rerun_claim
from wtb_local.engines.reproducibility import BATCH_INVARIANT, BATCHED, ONE_SEQUENCE

ROOT = Path(__file__).resolve().parents[2]
MODEL = "Qwen_Qwen3-8B"
FILES = ("result/Qwen_Qwen3-8B/Wild-Tool-Bench_result.jsonl", "score/Qwen_Qwen3-8B/Wild-Tool-Bench_score.jsonl",
         "score/Qwen_Qwen3-8B/Wild-Tool-Bench_metric.json")


def _wtb(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "WTB_PROGRESS": "none"}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, capture_output=True, text=True,
                          env=env, timeout=600)


def _without_runner_ms(data: bytes) -> bytes:
    return re.sub(rb'"runner_ms": [0-9.e+-]+', b'"runner_ms": 0', data)


def test_a_replay_rerun_is_byte_identical_but_for_runner_ms(tmp_path: Path) -> None:
    recorded = tmp_path / "recorded"
    done = _wtb("--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "2",
                "--out", str(recorded))
    assert done.returncode == 0, done.stderr
    assert json.loads((recorded / "manifest.json").read_text())["rerun"] == {
        "identical": True, "why": "the oracle backend does not sample: its replies are fixed"}
    for name in ("a", "b"):
        done = _wtb("--backend", "replay", "--replay", str(recorded), "--dataset", "sample", "--limit", "2",
                    "--out", str(tmp_path / name))
        assert done.returncode == 0, done.stderr
    for file in FILES:
        a, b = (tmp_path / "a" / file).read_bytes(), (tmp_path / "b" / file).read_bytes()
        assert _without_runner_ms(a) == _without_runner_ms(b), file
        assert b'"runner_ms"' not in a or file.endswith(".jsonl")
    assert (tmp_path / "a" / FILES[2]).read_bytes() == (tmp_path / "b" / FILES[2]).read_bytes()
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["rerun"]["identical"] is True and "byte-identical" in manifest["rerun"]["why"]


@pytest.mark.parametrize(("backend", "scheduling", "identical", "why"), [
    ({"backend": "vllm", "scheduler": {"max_num_seqs": 256, "enable_prefix_caching": True}}, "continuous",
     False, BATCHED),
    ({"backend": "vllm", "scheduler": {"max_num_seqs": 1, "enable_prefix_caching": True}}, "continuous",
     False, BATCHED),  # one sequence, but a prompt's prefix may come from an earlier run's cache
    ({"backend": "vllm", "scheduler": {"max_num_seqs": 1, "enable_prefix_caching": False}}, "continuous",
     True, ONE_SEQUENCE),
    ({"backend": "vllm", "batch_invariant": True, "scheduler": {"max_num_seqs": 1024}}, "continuous",
     True, BATCH_INVARIANT),
    ({"backend": "vllm", "scheduler": {}}, "continuous", False, BATCHED),  # limits unknown: no claim
], ids=["batched", "one-sequence-cached", "one-sequence", "batch-invariant", "unknown"])
def test_the_vllm_claim_follows_what_the_engine_ran_with(backend: dict, scheduling: str, identical: bool,
                                                         why: str) -> None:
    assert rerun_claim(backend, scheduling) == {"identical": identical, "why": why}


def test_the_other_backends_claims() -> None:
    assert rerun_claim({"backend": "transformers"}, "waves")["identical"] is True
    assert rerun_claim({"backend": "transformers"}, "continuous")["identical"] is False
    assert rerun_claim({"backend": "scripted"}, "continuous")["identical"] is True
    assert rerun_claim({"backend": "openai"}, "continuous")["identical"] is None
    assert rerun_claim({"backend": "openai-chat"}, "continuous")["identical"] is None
