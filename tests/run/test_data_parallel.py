"""`--data-parallel-size` reaches vLLM's engine arguments unchanged, and only when set: a vLLM without data
parallelism is told so in one line instead of failing inside the engine."""

from __future__ import annotations

import dataclasses

import pytest

from wtb_local.engines.config import VLLMConfig
from wtb_local.engines.vllm_engine import unsupported_engine_args


def test_engine_args_carry_data_parallel_size_only_when_set() -> None:
    assert "data_parallel_size" not in VLLMConfig(model="m").engine_args()
    assert VLLMConfig(model="m", data_parallel_size=4).engine_args()["data_parallel_size"] == 4


def test_an_engine_without_data_parallelism_is_named() -> None:
    @dataclasses.dataclass
    class OldEngineArgs:
        model: str = ""
        tensor_parallel_size: int = 1

    args = VLLMConfig(model="m", data_parallel_size=2).engine_args()
    assert unsupported_engine_args({"model": "m", "tensor_parallel_size": 1}, OldEngineArgs) == []
    assert unsupported_engine_args(args, OldEngineArgs) == sorted(set(args) - {"model", "tensor_parallel_size"})
    assert "data_parallel_size" in unsupported_engine_args(args, OldEngineArgs)


def test_installed_vllm_accepts_every_engine_argument() -> None:
    engine = pytest.importorskip("vllm.engine.arg_utils")
    args = VLLMConfig(model="m", data_parallel_size=2, quantization="fp8", max_num_seqs=8).engine_args()
    assert unsupported_engine_args(args, engine.AsyncEngineArgs) == []


def test_the_run_option_reaches_the_vllm_config() -> None:
    from wtb_local.cli.run import run
    from wtb_local.engines import backend_class
    from wtb_local.run.setup.options import options_from_click
    from wtb_local.run.setup.resolved import ResolvedRun

    ctx = run.make_context("run", ["--model", "m", "--backend", "vllm", "--data-parallel-size", "2"])
    options = options_from_click(ctx, ctx.params)
    assert options.data_parallel_size == 2 and options.given == {"model", "backend", "data_parallel_size"}
    # prepare copies every option the resolved run holds (runner/setup/prepare.py), resolving --render-workers
    resolved = ResolvedRun(**{k: v for k, v in options if k in ResolvedRun.model_fields and k != "render_workers"})
    backend = backend_class("vllm").from_run(resolved, parser=None, renderer=None)
    assert backend.config.data_parallel_size == 2 and backend.config.tensor_parallel_size == 1
    ctx = run.make_context("run", ["--model", "m"])
    assert options_from_click(ctx, ctx.params).data_parallel_size is None
