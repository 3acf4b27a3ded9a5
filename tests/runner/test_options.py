"""The run's options as one frozen object (runner/setup/options.py) whose field metadata make the `run` command's
options, their `WTB_*` twins and help, and the hashed configuration; the resolved run (runner/setup/resolved.py)
is frozen too and says where each value came from (docs/architecture.md)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from wtb_local.backends import backend_choices, backend_names
from wtb_local.cli.run import run
from wtb_local.protocols import protocol_names
from wtb_local.runner.setup.config import _HASHED_WHEN_SET, HASHED_FIELDS, config_hash, hashed_config
from wtb_local.runner.setup.options import RunOptions, cli_fields, env_name, options_from_click
from wtb_local.runner.setup.resolved import ResolvedRun
from wtb_local.schema import SamplingConfig

# The hashed configuration before the options declared it (runner/setup/config.py's list then): run directories
# written then must keep their hashes.
LEGACY_HASHED = ("model", "model_name", "backend", "revision", "resolved_revision", "tokenizer_sha256", "parser",
                 "chat_template", "template_sha256", "template_kwargs", "sampling", "dataset_sha256", "dtype",
                 "quantization", "max_model_len", "script_sha256", "replay_sha256", "server_prompt", "protocol",
                 "paper_family")
LEGACY_WHEN_SET = {"replay_sha256", "server_prompt", "protocol", "paper_family"}


def test_every_field_is_an_option_with_its_env_twin_and_help() -> None:
    params = {p.name: p for p in run.params}
    assert set(params) == set(cli_fields())
    for name, cli in cli_fields().items():
        assert (params[name].envvar, params[name].help, params[name].show_envvar) == (env_name(name), cli.help, True)
    assert env_name("max_new_tokens") == "WTB_MAX_NEW_TOKENS"
    # the backend choices are the registry's, the protocol choices the protocols'
    assert set(params["backend"].type.choices) == {"auto", *backend_names()} == set(backend_choices())
    assert tuple(params["protocol"].type.choices) == protocol_names()


def test_the_hashed_configuration_is_declared_by_the_options_and_unchanged() -> None:
    # parser_version: vLLM's own parsers (vllm:NAME) record vLLM's version, hashed when set
    assert sorted(HASHED_FIELDS) == sorted((*LEGACY_HASHED, "parser_version"))
    assert _HASHED_WHEN_SET == LEGACY_WHEN_SET | {"parser_version"}
    assert set(HASHED_FIELDS) <= set(ResolvedRun.model_fields)  # each hashed value is a resolved run's field
    run = ResolvedRun(model="Qwen/Qwen3-8B", model_name="Qwen/Qwen3-8B", backend="vllm", parser="hermes",
                      template_kwargs={"enable_thinking": False},
                      sampling=SamplingConfig(max_new_tokens=512, temperature=0.6), dataset_sha256="d" * 64,
                      tokenizer_sha256="t" * 64, template_sha256="a" * 64)
    # the hashes RunSettings gave these values before this layout (computed with that code)
    assert config_hash(hashed_config(run)) == "9e948dd6e1d7bd96fd0e965e2a179b94d4d70e6132e80206afb37ca385e24af2"
    paper = run.model_copy(update={"protocol": "paper", "paper_family": "qwen3", "parser": "paper:qwen"})
    assert config_hash(hashed_config(paper)) == "0042e6dd0acbbef8e6eefa05b39fc26afdd8a15d8f1b6e012fcd7f8d9199c022"


def test_options_and_the_resolved_run_are_frozen() -> None:
    options = RunOptions(model="m")
    with pytest.raises(ValidationError, match="frozen"):
        options.model = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        ResolvedRun(backend="oracle").backend = "vllm"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="extra"):
        RunOptions(modle="m")  # type: ignore[call-arg]


def test_sources_say_given_on_the_command_line_in_the_environment_or_default(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = run.make_context("run", ["--model", "m", "--max-new-tokens", "99", "--sessions", "0,3"])
    options = options_from_click(ctx, ctx.params)
    assert options.given == {"model", "max_new_tokens", "sessions"} and options.sessions == ("0", "3")
    assert [options.source(n) for n in ("max_new_tokens", "temperature", "dataset")] == [
        "given (--max-new-tokens)", "default", "default"]
    monkeypatch.setenv("WTB_TOP_P", "0.5")
    ctx = run.make_context("run", ["--model", "m"])
    from_env = options_from_click(ctx, ctx.params)
    assert (from_env.top_p, from_env.source("top_p"), from_env.given) == (0.5, "given (WTB_TOP_P)", {"model", "top_p"})


# --- the engine settings come from the declarations ----------------------------------------------------------


def test_each_engine_setting_is_declared_on_a_resolved_field_and_names_a_config_field() -> None:
    from wtb_local.backends.config import OpenAIConfig, TransformersConfig, VLLMConfig
    from wtb_local.runner.setup.options import engine_fields

    configs = set(VLLMConfig.model_fields) | set(TransformersConfig.model_fields) | set(OpenAIConfig.model_fields)
    declared = engine_fields()
    assert set(declared) <= set(ResolvedRun.model_fields)
    assert {name for names in declared.values() for name in names} <= configs
    assert declared["max_num_seqs"] == ("max_num_seqs", "max_concurrency")


def test_the_backends_build_their_engine_configs_from_the_declarations() -> None:
    """`--max-num-seqs 3` reaches vLLM's `max_num_seqs` and the OpenAI client's `max_concurrency`; unset, each
    config keeps its own default (vLLM's choice, 64 concurrent requests)."""
    from wtb_local.backends.hf_generate import TransformersBackend
    from wtb_local.backends.openai_server import OpenAIBackend
    from wtb_local.backends.vllm_engine import VLLMBackend

    given = ResolvedRun(backend="vllm", model="org/m", max_num_seqs=3, max_num_batched_tokens=512, revision="r1",
                        enforce_eager=True, tensor_parallel_size=2, default_max_model_len=4096, resolved_dtype="float32",
                        base_url="http://127.0.0.1:9/v1", request_timeout=5.0, server_prompt="text", batch_size=4,
                        sampling=SamplingConfig(seed=11))
    vllm = VLLMBackend.from_run(given, parser=None, renderer=None).config
    assert (vllm.model, vllm.max_num_seqs, vllm.max_num_batched_tokens, vllm.revision, vllm.enforce_eager,
            vllm.tensor_parallel_size, vllm.max_model_len, vllm.dtype, vllm.seed) == (
        "org/m", 3, 512, "r1", True, 2, 4096, "float32", 11)
    server = OpenAIBackend.from_run(given, parser=None, renderer=None).config
    assert (server.model, server.max_concurrency, server.timeout_s, server.prompt_format, server.revision,
            server.base_url) == ("org/m", 3, 5.0, "text", "r1", "http://127.0.0.1:9/v1")
    hf = TransformersBackend.from_run(given, parser=None, renderer=None).config
    assert (hf.model, hf.batch_size, hf.revision, hf.dtype, hf.max_model_len) == ("org/m", 4, "r1", "float32", None)
    unset = ResolvedRun(backend="openai", model="org/m", base_url="http://127.0.0.1:9/v1")
    assert OpenAIBackend.from_run(unset, parser=None, renderer=None).config.max_concurrency == 64
    assert OpenAIBackend.from_run(unset, parser=None, renderer=None).config.prompt_format == "token-ids"
    assert VLLMBackend.from_run(unset, parser=None, renderer=None).config.max_num_seqs is None


def test_a_value_no_resolved_field_holds_is_an_error_not_dropped() -> None:
    from wtb_local.runner.setup.prepare import _resolved_values

    assert _resolved_values({"backend": "oracle", "temperature": 0.5}) == {"backend": "oracle"}
    with pytest.raises(RuntimeError, match="prepare: max_num_seq set by a stage"):
        _resolved_values({"backend": "oracle", "max_num_seq": 2})


def test_the_docs_options_table_is_the_declarations() -> None:
    from pathlib import Path

    from wtb_local.runner.setup.options import options_table

    text = (Path(__file__).resolve().parents[2] / "docs" / "options.md").read_text(encoding="utf-8")
    assert text.endswith(options_table()), "docs/options.md is stale: python scripts/options_table.py"
    assert "| `--max-num-seqs` | `WTB_MAX_NUM_SEQS` |  |  | `max_num_seqs`, `max_concurrency` |" in text
