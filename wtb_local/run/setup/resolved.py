"""A resolved run: every value `prepare` decided, with where each came from. Frozen: the loop, the store,
the scorer and the manifest read it, nothing changes it (docs/architecture.md, "prepare").

Its option fields are not declared here a second time: each keeps its one declaration in `RunOptions`
(run/setup/options.py: type, default, help, hash, engine setting). This module declares only what
`prepare` decides beyond the options as given (`Decided`, each saying why the run keeps it) and names the
options a run does not keep (`NOT_KEPT`, each saying where it goes instead)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from wtb_local.contract.schema import SamplingConfig
from wtb_local.contract.spec import engine_settings
from wtb_local.run.setup.options import RunOptions, cli_fields, engine_fields


@dataclass(frozen=True)
class Decided:
    """A resolved-run field that is not an option as given: `prepare` decides it, for the reason `why`. One
    named like an option takes that option's place (its resolved value has another type or default);
    `replaces` names the options whose values it holds instead, and it is listed in the first one's place;
    `after`: the option it is listed after (else after all the options). The places keep the serialized
    resolved run's keys, and so the manifest's, in the order they always had."""

    why: str
    replaces: tuple[str, ...] = ()
    after: str | None = None


# The options a resolved run does not keep, and where each goes instead.
NOT_KEPT = {
    "repeats": "`run --repeats K` prepares one run per repeat, each with its own seed and folder (analysis/commands/repeat_runs.py)",
    "mlflow_uri": "the `run` command exports the finished run (cli/run.py); nothing of the run depends on it",
    "from_env": "where each option came from is `sources`",
}


class _Decided(BaseModel):
    """The declarations of the values `prepare` decides (ResolvedRun below takes them as fields)."""

    model_config = ConfigDict(protected_namespaces=())

    backend: Annotated[str, Decided("the backend that runs: `auto` resolved (backends.auto_backend), so required")]
    parser_version: Annotated[str | None, Decided(
        "the version of the parser's implementation when it is not wtb_local's own: `vllm:NAME` records the "
        "installed vLLM's (hashed when set: a vLLM upgrade may read the same completions differently)",
        after="parser")] = None
    parser_options: Annotated[dict[str, Any], Decided(
        "the parser's options, e.g. {\"thinking\": \"per-step\"} when generation prompts may pre-fill <think>; "
        "recorded so replays parse alike", after="parser")] = Field(default_factory=dict)
    template_kwargs: Annotated[dict[str, Any], Decided(
        "--thinking and --template-kwarg as the family's template takes them (formats/rendering/kwargs.py)",
        replaces=("template_kwarg",))] = Field(default_factory=dict)
    sampling: Annotated[SamplingConfig, Decided(
        "the sampling values as one SamplingConfig, after the thinking mode's budget and the protocol",
        replaces=("temperature", "top_p", "max_new_tokens", "seed"))] = Field(default_factory=SamplingConfig)
    resolved_dtype: Annotated[str | None, Decided(
        "--dtype with auto resolved from the checkpoint and the device (run/setup/dtype.py), for a backend "
        "that loads weights; None for the others. Not hashed: numerics only, like the batch "
        "(docs/real-model.md); the engine is given this, --dtype as asked is hashed", after="dtype")] = None
    render_workers: Annotated[int, Decided(
        "the number of processes rendering prompts beside the loop: `auto` resolved (formats/rendering/pool.py)")] = 0
    verify_prompts: Annotated[str | None, Decided(
        "the fast prompt paths' checks (formats/rendering/checks.py); None where the run's prompts do not go through "
        "them. Not hashed: prompts are the reference path's either way")] = None
    on_prompt_mismatch: Annotated[str | None, Decided(
        "as verify_prompts: None where the run's prompts do not go through the fast paths")] = None
    protocol: Annotated[str | None, Decided(
        "the protocol's hash value: None for release, left out of the hash (benchmark/protocols/)")] = None
    template_sha256: Annotated[str | None, Decided("of the chat template the prompts are rendered with")] = None
    resolved_revision: Annotated[str | None, Decided(
        "the hub commit the model id resolved to (from the local cache)")] = None
    tokenizer_sha256: Annotated[str | None, Decided("of the tokenizer files on disk")] = None
    dataset_sha256: Annotated[str | None, Decided("of the dataset file the sessions are read from")] = None
    script_sha256: Annotated[str | None, Decided("of the scripted backend's script file")] = None
    replay_sha256: Annotated[str | None, Decided("of the replayed result file (a run directory resolved to it)")] = None
    default_max_model_len: Annotated[int | None, Decided(
        "vLLM's context window when --max-model-len is not given (context_length.py). Not hashed: it only "
        "bounds prompt + generation from above, it does not change what the model sees")] = None
    sources: Annotated[dict[str, str], Decided(
        "where each value came from; written as the manifest's `sources`")] = Field(default_factory=dict,
                                                                                   exclude=True)


def decided_fields() -> dict[str, Decided]:
    """The resolved run's fields that are not options as given, with why each exists."""
    return {name: next(m for m in info.metadata if isinstance(m, Decided))
            for name, info in _Decided.model_fields.items()}


def _fields() -> dict[str, tuple[Any, FieldInfo]]:
    """The resolved run's fields in order: the options as `RunOptions` declares them, each `Decided` field
    in its place."""
    decided = decided_fields()
    placed = {name: name for name in decided if name in RunOptions.model_fields}
    placed.update({option: name for name, why in decided.items() for option in why.replaces})
    fields: dict[str, tuple[Any, FieldInfo]] = {}

    def add(name: str, info: FieldInfo) -> None:
        fields.setdefault(name, (info.annotation, FieldInfo.merge_field_infos(info)))

    for option, info in RunOptions.model_fields.items():
        if option in placed:
            add(placed[option], _Decided.model_fields[placed[option]])
        elif option not in NOT_KEPT:
            add(option, info)
        for name, why in decided.items():
            if why.after == option:
                add(name, _Decided.model_fields[name])
    for name, info in _Decided.model_fields.items():
        add(name, info)
    return fields


class _ResolvedRunBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    @property
    def seed(self) -> int:
        return self.sampling.seed  # type: ignore[attr-defined]  # a field the subclass declares

    def engine_settings(self, config: type[BaseModel]) -> dict[str, Any]:
        """The keyword arguments of the engine config `config` (engines/config.py) that the run's options
        decide, as their declarations say (`Cli.engine`, run/setup/options.py)."""
        declared = engine_fields()
        return engine_settings(declared, {name: getattr(self, name) for name in declared}, config)


ResolvedRun = create_model(  # type: ignore[call-overload]
    "ResolvedRun", __base__=_ResolvedRunBase, __module__=__name__,
    __doc__="""The run's values after defaults, the backend, the protocol, the recorded run (replays) and the
    prompt's thinking mode have decided them. `sources[name]` says where a value came from: "default",
    "given (--flag)", "given (WTB_FLAG)", "protocol paper (family qwen)", "recorded run", ...""",
    **_fields())


def resolved_table() -> str:
    """docs/options.md's second table: the resolved run's fields that are not options as given, and the
    options it does not keep (scripts/options_table.py writes it)."""
    lines = ["| resolved value | in place of | why |", "|---|---|---|"]
    for name, why in decided_fields().items():
        instead = why.replaces or ((name,) if name in RunOptions.model_fields else ())
        shown = ", ".join(f"`--{option.replace('_', '-')}`" for option in instead)
        lines.append(f"| `{name}` | {shown} | {why.why.replace('|', chr(92) + '|')} |")
    flags = {name: cli.flag(name) for name, cli in cli_fields().items()}
    for option, where in NOT_KEPT.items():
        lines.append(f"| (not kept) | `{flags.get(option, option)}` | {where} |")
    return "\n".join(lines) + "\n"
