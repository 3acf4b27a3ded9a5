"""The time estimate a run states before it starts, against the documented runs' recorded times."""

from __future__ import annotations

import pytest

from tests.run.conftest import invoke
from wtb_local.run.loop.estimate import DOCUMENTED_ERROR, estimate

# (backend, tasks, recorded seconds, where): the recorded runs of docs/real-model.md and
# docs/explain-real-model.md (the tokens generated at a greedy 512-token budget, the sample's steps)
DOCUMENTED = [
    ("vllm", 32, 288.0, "real-model.md §5, vllm"),
    ("vllm", 32, 464.0, "real-model.md §0, generation at load 58 to 8"),
    ("vllm", 32, 382.0, "real-model.md §0, the earlier run's generation"),
    ("openai", 32, 209.0, "real-model.md §5, openai"),
    ("openai", 32, 238.0, "real-model.md §5, openai-8"),
    ("openai", 32, 659.0, "real-model.md §5, openai-1"),
    ("vllm", 16, 85.3, "explain-real-model.md, base/repeats/0"),
    ("vllm", 16, 64.8, "explain-real-model.md, base/repeats/1"),
    ("vllm", 16, 100.0, "explain-real-model.md, base/repeats/2"),
    ("vllm", 16, 198.6, "explain-real-model.md, context-1536"),
    ("transformers", 16, 1316.9, "explain-real-model.md, engine-transformers"),
]


def test_the_estimate_is_as_far_off_as_documented() -> None:
    errors = {}
    for backend, tasks, seconds, where in DOCUMENTED:
        made = estimate(backend, tasks, 512, gpu=False)
        assert made.seconds is not None
        errors[where] = round(100 * (made.seconds / seconds - 1))
    assert errors["real-model.md §5, vllm"] == 0  # the rate's own run
    assert errors["real-model.md §0, generation at load 58 to 8"] == -38
    assert errors["real-model.md §5, openai-1"] == -62  # one request at a time: the rate is for all in flight
    assert errors["explain-real-model.md, base/repeats/1"] == 122  # temperature 0.7: 46 tokens a step, not 110
    assert errors["explain-real-model.md, engine-transformers"] == 201
    low, high = min(errors.values()), max(errors.values())
    assert DOCUMENTED_ERROR == f"off by {low}% to +{high}% on the documented runs"


def test_the_estimate_line() -> None:
    made = estimate("vllm", 32, 512, gpu=False)
    assert made.line() == ("estimate: about 5 min for 32 task(s), about 37 steps and 4,090 generated tok at 14.2 "
                           "tok/s (the in-process vLLM CPU engine's, docs/real-model.md §5; off by -62% to +201% "
                           "on the documented runs); the progress line's eta updates it")
    capped = estimate("transformers", 8, 16, gpu=False)  # a step generates at most max_new_tokens
    assert capped.tokens == pytest.approx(8 * 37 / 32 * 16)
    assert estimate("vllm", 4, 512, gpu=True).line() == (
        "estimate: 4 task(s), about 5 steps and 511 generated tok; no recorded rate for this backend on this "
        "machine: the progress line's eta, from this run's first tasks, is the estimate")


def test_a_run_states_its_estimate_before_it_starts(qwen_tiny_dir, tmp_path, monkeypatch) -> None:
    from wtb_local.engines import environment

    monkeypatch.setattr(environment, "gpus", list)  # the CPU rates: this machine may hold a GPU
    common = ["--dataset", "sample", "--limit", "1", "--max-new-tokens", "8", "--progress", "plain"]
    done = invoke(["--backend", "transformers", "--model", str(qwen_tiny_dir), "--out", str(tmp_path / "t"),
                   *common], env={"HF_HUB_OFFLINE": "1"})
    assert done.exit_code == 0, done.output
    lines = done.stderr.splitlines()
    said = [line for line in lines if line.startswith("estimate:")]
    assert said == [("estimate: about 72 s for 4 task(s), about 5 steps and 37 generated tok at 0.52 tok/s "
                     "(transformers on the CPU, docs/explain-real-model.md (680 tok in 1,317 s); off by -62% to "
                     "+201% on the documented runs); the progress line's eta updates it")]
    assert lines.index(said[0]) < next(i for i, x in enumerate(lines) if x.startswith("loading the"))
    oracle = invoke(["--backend", "oracle", "--model", "Qwen/Qwen2.5-7B-Instruct", "--out", str(tmp_path / "o"),
                     *common], env={"HF_HUB_OFFLINE": "1"})
    assert oracle.exit_code == 0, oracle.output
    assert not [line for line in oracle.stderr.splitlines() if line.startswith("estimate:")]  # answers at once
