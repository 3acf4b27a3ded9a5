"""`--distributed-executor-backend` reaches vLLM's engine arguments unchanged, and only when set; `ray` on
a vLLM platform without a Ray device (the CPU build) stops the run in one line before the engine starts
(docs/multinode.md §4)."""

from __future__ import annotations

from typing import Any

import pytest

from wtb_local.engines.config import VLLMConfig


def test_engine_args_carry_the_executor_only_when_set() -> None:
    assert "distributed_executor_backend" not in VLLMConfig(model="m").engine_args()
    assert VLLMConfig(model="m", distributed_executor_backend="ray").engine_args()["distributed_executor_backend"] == "ray"


def test_the_run_option_and_its_env_twin_reach_the_vllm_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from wtb_local.cli.run import run
    from wtb_local.engines import backend_class
    from wtb_local.run.setup.options import options_from_click
    from wtb_local.run.setup.resolved import ResolvedRun

    def settings_from_options(ctx: Any) -> Any:
        return options_from_click(ctx, ctx.params)

    ctx = run.make_context("run", ["--model", "m", "--backend", "vllm", "--distributed-executor-backend", "ray",
                                   "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"])
    options = settings_from_options(ctx)
    # prepare copies every option the resolved run holds (runner/setup/prepare.py)
    resolved = ResolvedRun(**{k: v for k, v in options if k in ResolvedRun.model_fields and k != "render_workers"})
    backend = backend_class("vllm").from_run(resolved, parser=None, renderer=None)
    assert (backend.config.distributed_executor_backend, backend.config.tensor_parallel_size,
            backend.config.pipeline_parallel_size) == ("ray", 8, 2)
    monkeypatch.setenv("WTB_DISTRIBUTED_EXECUTOR_BACKEND", "mp")
    assert settings_from_options(run.make_context("run", ["--model", "m"])).distributed_executor_backend == "mp"
    monkeypatch.delenv("WTB_DISTRIBUTED_EXECUTOR_BACKEND")
    assert settings_from_options(run.make_context("run", ["--model", "m"])).distributed_executor_backend is None
    with pytest.raises(Exception, match="'nccl' is not one of 'mp', 'ray', 'uni', 'external_launcher'"):
        run.make_context("run", ["--model", "m", "--distributed-executor-backend", "nccl"])


def test_installed_vllm_accepts_the_argument() -> None:
    engine = pytest.importorskip("vllm.engine.arg_utils")
    from wtb_local.engines.vllm_engine import unsupported_engine_args

    args = VLLMConfig(model="m", distributed_executor_backend="ray").engine_args()
    assert unsupported_engine_args(args, engine.AsyncEngineArgs) == []


def test_ray_on_a_platform_without_a_ray_device_is_one_line() -> None:
    platforms = pytest.importorskip("vllm.platforms")
    from wtb_local.engines.vllm_engine import _platform_engine_args

    if platforms.current_platform.ray_device_key:
        pytest.skip(f"this vLLM platform ({platforms.current_platform.device_name}) supports Ray")
    with pytest.raises(ValueError) as failure:
        _platform_engine_args(VLLMConfig(model="m", distributed_executor_backend="ray"))
    assert str(failure.value) == (f"--distributed-executor-backend ray: vLLM's "
                                  f"{platforms.current_platform.device_name} platform does not support Ray (it has "
                                  "no Ray device key); use mp or leave it unset")
