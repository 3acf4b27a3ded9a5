"""Engine configs and the shared sampling resolution (no model needed)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from wtb_local.contract.schema import SamplingConfig
from wtb_local.engines.config import OpenAIConfig, TransformersConfig, VLLMConfig
from wtb_local.engines.sampling_defaults import eos_ids, model_defaults, resolve, strip_trailing

QWEN25 = {"do_sample": True, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05,
          "eos_token_id": [151645, 151643]}


def test_vllm_config_defaults_and_engine_args() -> None:
    cfg = VLLMConfig(model="Qwen/Qwen2.5-7B-Instruct", max_num_seqs=256)
    assert (cfg.dtype, cfg.gpu_memory_utilization, cfg.enable_prefix_caching, cfg.trust_remote_code) == (
        "auto", None, True, False)
    args = cfg.engine_args()
    assert args["max_num_seqs"] == 256 and args["tensor_parallel_size"] == 1
    assert "quantization" not in args and "tokenizer" not in args  # unset: vLLM's own defaults


def test_configs_refuse_unknown_and_bad_fields() -> None:
    with pytest.raises(ValidationError, match="gpu_memory_utilisation"):
        VLLMConfig(model="m", gpu_memory_utilisation=0.5)
    with pytest.raises(ValidationError):
        VLLMConfig(model="m", tensor_parallel_size=0)
    with pytest.raises(ValidationError):
        TransformersConfig(model="m", batch_size=0)
    assert TransformersConfig(model="m").batch_size == 16
    assert OpenAIConfig(base_url="http://x/v1", model="m").max_concurrency == 64


def test_paper_protocol_defaults() -> None:
    defaults = model_defaults(QWEN25)
    plain = resolve(SamplingConfig(), defaults, 512)
    assert (plain.do_sample, plain.temperature, plain.top_p, plain.top_k, plain.repetition_penalty) == (
        True, 0.7, 0.8, 20, 1.05)
    # transformers semantics: no do_sample means greedy, whatever temperature says; top_k defaults to 50.
    greedy = resolve(SamplingConfig(), model_defaults({"temperature": 0.6, "top_p": 0.9}), 512)
    assert (greedy.do_sample, greedy.temperature, greedy.top_k) == (False, 0.0, 0)
    sampled = resolve(SamplingConfig(temperature=0.3), model_defaults({}), 100)
    assert (sampled.do_sample, sampled.temperature, sampled.top_p, sampled.top_k) == (True, 0.3, 1.0, 50)
    forced_greedy = resolve(SamplingConfig(temperature=0.0, top_p=0.5), defaults, 512)
    assert (forced_greedy.do_sample, forced_greedy.top_p) == (False, 1.0)
    assert resolve(SamplingConfig(top_p=0.5), defaults, 7).key() != plain.key()


def test_eos_helpers() -> None:
    assert eos_ids(151645, [151645, 151643], None) == frozenset({151645, 151643})
    assert strip_trailing("a<|im_end|>", ["<|im_end|>", "<|endoftext|>"]) == "a"
    assert strip_trailing("<|im_end|>a", ["<|im_end|>"]) == "<|im_end|>a"


def test_backend_modules_import_light() -> None:
    code = ("import sys, wtb_local.engines.vllm_engine, wtb_local.engines.hf_generate, "
            "wtb_local.engines.openai_server, tests.helpers; "
            "print(sorted(m for m in ('torch', 'transformers', 'vllm', 'tokenizers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_engine_log_level_is_quiet_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's own lines: error by default, info with --verbose, any level with --engine-log-level (which wins),
    a VLLM_LOGGING_LEVEL the user exported kept when the run gives none; the level reaches this process's
    `vllm` logger and, through the environment, the engine processes it spawns."""
    import logging

    from wtb_local.engines.vllm_engine import VLLMBackend, quiet_engine_logs
    from wtb_local.run.setup.resolved import ResolvedRun

    def level(**fields: object) -> str:
        run = ResolvedRun(backend="vllm", model="m", **fields)
        return VLLMBackend.from_run(run, parser=None, renderer=None).log_level

    monkeypatch.delenv("VLLM_LOGGING_LEVEL", raising=False)
    assert level() == "error"
    assert level(verbose=True) == "info"
    assert level(verbose=True, engine_log_level="warning") == "warning"
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "DEBUG")
    assert level() == "DEBUG"
    monkeypatch.setattr(logging.getLogger("vllm"), "level", logging.NOTSET)
    monkeypatch.delenv("PYTHONWARNINGS", raising=False)
    quiet_engine_logs("error")
    assert logging.getLogger("vllm").level == logging.ERROR
    import os

    assert os.environ["VLLM_LOGGING_LEVEL"] == "ERROR"
    assert os.environ["PYTHONWARNINGS"] == "ignore::FutureWarning,ignore::DeprecationWarning"
