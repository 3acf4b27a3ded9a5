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
