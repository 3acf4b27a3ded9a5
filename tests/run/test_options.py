"""The run's options as one frozen object (runner/setup/options.py) whose field metadata make the `run` command's
options, their `WTB_*` twins and help, and the hashed configuration; the resolved run (runner/setup/resolved.py)
is frozen too and says where each value came from (docs/architecture.md)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from wtb_local.benchmark.protocols import protocol_names
from wtb_local.cli.run import run
from wtb_local.contract.schema import SamplingConfig
from wtb_local.engines import backend_choices, backend_names
from wtb_local.run.setup.config import _HASHED_WHEN_SET, HASHED_FIELDS, config_hash, hashed_config
from wtb_local.run.setup.options import RunOptions, cli_fields, env_name, options_from_click
from wtb_local.run.setup.resolved import ResolvedRun

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
    from wtb_local.engines.config import OpenAIConfig, TransformersConfig, VLLMConfig
    from wtb_local.run.setup.options import engine_fields

    configs = set(VLLMConfig.model_fields) | set(TransformersConfig.model_fields) | set(OpenAIConfig.model_fields)
    declared = engine_fields()
    assert set(declared) <= set(ResolvedRun.model_fields)
    assert {name for names in declared.values() for name in names} <= configs
    assert declared["max_num_seqs"] == ("max_num_seqs", "max_concurrency")


# The engine-config fields no option declares, and why: what the run resolved beyond the options (from_run
# gives those), or what a run never sets (scripts, tests and the engine's own set-up do).
NOT_AN_OPTION = {
    ("VLLMConfig", "dtype"): "resolved_dtype: --dtype auto resolved from the checkpoint and the device",
    ("VLLMConfig", "seed"): "sampling.seed: the run seed, one value for the engine and the requests",
    ("VLLMConfig", "tokenizer"): "never set by a run: vLLM reads the tokenizer from `model`",
    ("VLLMConfig", "download_dir"): "never set by a run: the hub's cache",
    ("VLLMConfig", "enable_chunked_prefill"): "the engine's set-up decides it on vLLM's CPU build (vllm_engine.py)",
    ("VLLMConfig", "load_format"): "never set by a run: random weights for scripts/gpu_throughput.py",
    ("TransformersConfig", "dtype"): "resolved_dtype, as for vLLM",
    ("TransformersConfig", "device_map"): "never set by a run: accelerate's `auto` placement",
    ("OpenAIConfig", "max_retries"): "never set by a run: the client's retry policy",
    ("OpenAIConfig", "retry_backoff_s"): "never set by a run: the client's retry policy",
    ("OpenAIConfig", "generation_config"): "read from `model` when the client starts",
}
# Engine settings an engine's from_run reads by hand besides the declarations: vLLM's context window falls back
# to the one prepare chose (default_max_model_len).
READ_BY_HAND = {"VLLMBackend": {"max_model_len"}}


def test_every_engine_config_field_is_one_option_or_named_with_a_reason() -> None:
    """A new engine-config field is either declared by exactly one option (`Cli.engine`) or listed above with
    why no option declares it; an option names fields that exist, at most one per config."""
    from wtb_local.engines.config import OpenAIConfig, TransformersConfig, VLLMConfig
    from wtb_local.run.setup.options import engine_fields

    declared = engine_fields()
    for config in (VLLMConfig, TransformersConfig, OpenAIConfig):
        for field in config.model_fields:
            options = [name for name, names in declared.items() if field in names]
            listed = (config.__name__, field) in NOT_AN_OPTION
            assert len(options) + listed == 1, f"{config.__name__}.{field}: options {options}, listed {listed}"
        for option, names in declared.items():
            assert len([name for name in names if name in config.model_fields]) <= 1, (config.__name__, option)
    assert {name for names in declared.values() for name in names} <= (
        set(VLLMConfig.model_fields) | set(TransformersConfig.model_fields) | set(OpenAIConfig.model_fields))
    assert {key for key in NOT_AN_OPTION if key[1] not in
            {"VLLMConfig": VLLMConfig, "TransformersConfig": TransformersConfig,
             "OpenAIConfig": OpenAIConfig}[key[0]].model_fields} == set()  # no stale entry


def test_the_engine_backends_copy_no_declared_option_by_hand() -> None:
    """The engines' `from_run` take the declared options through `engine_settings`: a `run.NAME` of an option
    declared with an engine setting is a second, hand-made path (only READ_BY_HAND's, with its reason)."""
    import inspect
    import re

    from wtb_local.engines.hf_generate import TransformersBackend
    from wtb_local.engines.openai_chat import OpenAIChatBackend
    from wtb_local.engines.openai_server import OpenAIBackend
    from wtb_local.engines.vllm_engine import VLLMBackend
    from wtb_local.run.setup.options import engine_fields

    for backend in (VLLMBackend, TransformersBackend, OpenAIBackend, OpenAIChatBackend):
        text = "".join(inspect.getsource(getattr(backend, name)) for name in ("from_run", "config_from_run")
                       if hasattr(backend, name))
        assert "engine_settings(" in text or "config_from_run(" in text, backend.__name__
        by_hand = set(re.findall(r"\brun\.(\w+)", text)) & set(engine_fields())
        assert by_hand == READ_BY_HAND.get(backend.__name__, set()), backend.__name__


def test_the_resolved_run_declares_no_option_again() -> None:
    """The resolved run's fields are the options' own declarations (same type, default and metadata), except
    the options it keeps in another form, and the values prepare decides, each with why; its field order (the
    manifest's `settings` order) is the one it always had."""
    from wtb_local.run.setup.resolved import NOT_KEPT, decided_fields

    decided = decided_fields()
    replaced = {option for why in decided.values() for option in why.replaces}
    for name, info in RunOptions.model_fields.items():
        if name in decided:
            continue
        if name in replaced or name in NOT_KEPT:
            assert name not in ResolvedRun.model_fields
            continue
        kept = ResolvedRun.model_fields[name]
        assert (kept.annotation, kept.default, kept.metadata, kept.exclude) == (
            info.annotation, info.default, info.metadata, info.exclude), name
    assert set(ResolvedRun.model_fields) == (set(RunOptions.model_fields) - replaced - set(NOT_KEPT)) | set(decided)
    assert all(why.why for why in decided.values()) and all(NOT_KEPT.values())
    assert tuple(ResolvedRun.model_fields) == (
        "model", "model_name", "backend", "base_url", "server_prompt", "api_key", "request_timeout",
        "served_model_name", "parser", "parser_version", "parser_options", "chat_template", "thinking",
        "template_kwargs", "dataset", "script", "replay", "out", "limit", "sessions", "shard", "resume",
        "overwrite", "sampling", "revision", "trust_remote_code", "dtype", "resolved_dtype", "quantization",
        "max_model_len", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
        "distributed_executor_backend", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens",
        "enable_prefix_caching", "enforce_eager", "batch_size", "scheduling", "render_workers", "verify_prompts",
        "on_prompt_mismatch", "progress", "engine_log_level", "verbose", "protocol", "paper_family",
        "template_sha256", "resolved_revision", "tokenizer_sha256", "dataset_sha256", "script_sha256",
        "replay_sha256", "default_max_model_len", "sources")
    # the declaration's constraints hold on the resolved run too; the key never reaches a dump
    with pytest.raises(ValidationError, match="extra"):
        ResolvedRun(backend="vllm", max_num_seq=2)  # type: ignore[call-arg]
    run = ResolvedRun(backend="openai", api_key="secret", sessions=["s1"], sources={"model": "default"})
    assert run.model_dump(mode="json")["sessions"] == ["s1"]
    assert {"api_key", "sources"} & set(run.model_dump()) == set()


def test_the_backends_build_their_engine_configs_from_the_declarations() -> None:
    """`--max-num-seqs 3` reaches vLLM's `max_num_seqs` and the OpenAI client's `max_concurrency`; unset, each
    config keeps its own default (vLLM's choice, 64 concurrent requests)."""
    from wtb_local.engines.hf_generate import TransformersBackend
    from wtb_local.engines.openai_server import OpenAIBackend
    from wtb_local.engines.vllm_engine import VLLMBackend

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
    from wtb_local.run.setup.prepare import _resolved_values

    assert _resolved_values({"backend": "oracle", "temperature": 0.5}) == {"backend": "oracle"}
    with pytest.raises(RuntimeError, match="prepare: max_num_seq set by a stage"):
        _resolved_values({"backend": "oracle", "max_num_seq": 2})
    # a stage's own misspelling is named with the stage, before the next stage reads the values
    from wtb_local.engines import backend_class
    from wtb_local.run.setup.prepare import BackendChoice, _fold

    class Misspelt(BackendChoice):
        def resolved(self) -> dict[str, object]:
            return {"backend": self.name, "max_num_seq": 2}

    values: dict[str, object] = {"backend": "auto"}
    with pytest.raises(RuntimeError, match="prepare: max_num_seq set by Misspelt, but the resolved run has no"):
        _fold(values, {}, Misspelt(backend_class("oracle"), "oracle"))  # type: ignore[arg-type]
    _fold(values, {}, BackendChoice(backend_class("oracle"), "oracle", {"backend": "given (--backend)"}))
    assert values == {"backend": "oracle"}
    # and a value of the wrong type, checked against its declaration where the stage decided it
    with pytest.raises(RuntimeError, match=r"prepare: backend set by BackendChoice to 3: Input should be a valid str"):
        _fold(values, {}, BackendChoice(backend_class("oracle"), 3))  # type: ignore[arg-type]


def test_the_docs_options_table_is_the_declarations() -> None:
    from pathlib import Path

    from wtb_local.run.setup.options import options_table

    text = (Path(__file__).resolve().parents[2] / "docs" / "options.md").read_text(encoding="utf-8")
    from wtb_local.run.setup.resolved import resolved_table

    assert options_table() in text and text.endswith(resolved_table()), (
        "docs/options.md is stale: python scripts/options_table.py")
    assert "| `sampling` | `--temperature`, `--top-p`, `--max-new-tokens`, `--seed` |" in text
    assert "| `--max-num-seqs` | `WTB_MAX_NUM_SEQS` |  |  | `max_num_seqs`, `max_concurrency` |" in text
