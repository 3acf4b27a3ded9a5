"""prepare: the user's options in, a frozen resolved run out (docs/architecture.md, "prepare").

Every value is decided here, once, with its source: the backend (asked what it needs, never tested by
name), the dataset and the sessions, the renderer and its template, the parser, the effective thinking
mode and the generation budget it implies, the protocol (which may replace the renderer, the parser and
the sampling, and says so), the context window and the run directory. Nothing is changed afterwards.
`_prepare` runs them as named stages, each returning a typed result with the sources it decided.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import TypeAdapter, ValidationError

from wtb_local.benchmark.protocols import protocol_named
from wtb_local.benchmark.protocols.base import Protocol, ProtocolRun
from wtb_local.contract.errors import RunError
from wtb_local.contract.schema import SamplingConfig
from wtb_local.engines import Backend, SetupError, auto_backend, backend_class, backend_names
from wtb_local.engines.environment import resolved_revision, tokenizer_sha256
from wtb_local.run.setup.options import RunOptions, cli_fields
from wtb_local.run.setup.paths import RunPaths, run_paths
from wtb_local.run.setup.resolved import ResolvedRun

if TYPE_CHECKING:  # loaded by the stages that need them (start-up)
    from wtb_local.run.setup.context_length import ContextRecord
    from wtb_local.run.setup.shards import ShardRecord

# The sampling values a backend that does not sample cannot honour.
_SAMPLING_OPTIONS = ("temperature", "top_p")


@dataclass(frozen=True)
class PreparedRun:
    """Everything decided before the first request."""

    run: ResolvedRun
    paths: RunPaths
    dataset_path: Path
    sessions: list[Any]
    selected: list[Any]
    renderer: Any
    parser: Any
    renderer_note: str | None
    thinking: Any  # thinking.ThinkingMode: the effective mode, decided by the prompt
    shard: ShardRecord | None  # --shard: this shard's sessions and the selection they come from
    protocol: Protocol
    applied: ProtocolRun  # the protocol's renderer, parser, episodes and manifest section
    backend_class: type[Backend]
    context_length: ContextRecord | None  # the window asked of an engine this run starts, and how

    def build_backend(self) -> Backend:
        try:
            return self.backend_class.from_run(self.run, parser=self.parser, renderer=self.renderer)
        except SetupError as exc:
            raise RunError(str(exc)) from None


def prepare(options: RunOptions, renderer: Any = None, stderr: Any = None, *, engine: bool = True) -> PreparedRun:
    """Resolve `options` into a run. `renderer`: one already loaded (tests and benchmarks share it);
    `engine`: whether this run starts its own engine (then it chooses the engine's context window)."""
    err = stderr or sys.stderr
    try:
        return _prepare(options, renderer, err, engine)
    except SetupError as exc:
        raise RunError(str(exc)) from None


def _prepare(options: RunOptions, renderer: Any, err: Any, engine: bool) -> PreparedRun:
    """The stages in order, each folded into the option values before the next: the backend's and the
    protocol's hooks (`Backend.resolve`/`select`, `Protocol.sampling`/`apply`) read and write those values
    as a dict, which is their interface; every other stage returns a typed result with its sources."""
    values: dict[str, Any] = {name: getattr(options, name) for name in cli_fields()}
    sources = {name: options.source(name) for name in cli_fields()}

    chosen = _backend_choice(options, err)
    _fold(values, sources, chosen)
    backend = chosen.backend
    caps = backend.capabilities
    rules = _protocol_choice(options, backend)
    _fold(values, sources, rules)
    protocol = rules.protocol
    values["parser_options"] = {}
    if not (caps.remote and caps.renders_prompts):  # only a server taking rendered prompts has a format
        values["server_prompt"] = None
    backend.resolve(values, sources, err)  # the backend's own hook (a replay: the recorded run's values)
    _fold(values, sources, _model_choice(values, sources, backend, err))
    data = _dataset_selection(values, backend, err)
    _fold(values, sources, data)
    template = _template_choice(values, caps, renderer, err)
    _fold(values, sources, template)
    reading = _parser_and_thinking(values, sources, backend, protocol, template.renderer)
    _fold(values, sources, reading)
    if (reading.sources.get("parser_options") or "").startswith("per step: "):  # a fallback: said at start
        print(f"warning: parser options {reading.sources['parser_options']}", file=err)
    protocol.sampling(values, sources, options, err)
    _unused_options(options, backend, err)
    applied = _protocol_applied(values, protocol, caps, template.renderer, reading.parser, data.selected)
    _fold(values, sources, applied)
    renderer, parser = applied.applied.renderer, applied.applied.parser
    engine_settings = _engine_settings(options, values, sources, backend, renderer, data.selected, engine, err)
    _fold(values, sources, engine_settings)
    sampling = _sampling(values, sources)
    _fold(values, sources, sampling)

    run = ResolvedRun(**_resolved_values(values), sources=sources)
    paths = run_paths(run)
    # A fresh run into the replayed directory would truncate the very file being replayed.
    if run.replay and paths.result_file.resolve() == Path(run.replay).resolve():
        raise RunError(f"--replay: {run.replay} is the result file this run writes; pass another --out")
    return PreparedRun(run, paths, data.dataset_path, data.sessions, data.selected, renderer, parser,
                       template.note, reading.thinking, data.shard_record, protocol, applied.applied, backend,
                       engine_settings.context)


# --- the stages -----------------------------------------------------------------------------------------
# Each returns a frozen result: its typed fields, `sources` (where what it decided came from; `None` drops a
# source) and `resolved()` (the resolved-run fields it sets, by name), which `_fold` puts into the values.

_Sources = dict[str, str | None]


def _resolved_values(values: dict[str, Any]) -> dict[str, Any]:
    """The values the resolved run keeps: its fields. An option it has no field for (sampling options,
    folded into `sampling`) is left behind; any other name a stage or a hook set is a bug of ours, said in
    one line, never dropped."""
    unknown = sorted(set(values) - set(ResolvedRun.model_fields) - set(RunOptions.model_fields))
    if unknown:
        raise RuntimeError(f"prepare: {', '.join(unknown)} set by a stage, but the resolved run has no such "
                           "field (run/setup/resolved.py)")
    return {name: value for name, value in values.items() if name in ResolvedRun.model_fields}


@functools.cache
def _field_type(name: str) -> TypeAdapter[Any]:
    """The type of the resolved-run field `name` as declared (an option the run folds into another value:
    the option's), with its constraints."""
    model = ResolvedRun if name in ResolvedRun.model_fields else RunOptions
    info = model.model_fields[name]
    annotation: Any = info.annotation  # every field of the two models is annotated
    if not info.metadata:
        return TypeAdapter(annotation)
    return TypeAdapter(Annotated[(annotation, *info.metadata)])


def _fold(values: dict[str, Any], sources: dict[str, str], stage: _Stage) -> None:
    """Put one stage's decisions into the option values and their sources; a name that is neither an option
    nor a resolved-run field is a bug of the stage, said with its name."""
    for name in getattr(stage, "dropped", ()):
        del values[name]
    decided = stage.resolved()
    unknown = sorted(set(decided) - set(ResolvedRun.model_fields) - set(RunOptions.model_fields))
    if unknown:
        raise RuntimeError(f"prepare: {', '.join(unknown)} set by {type(stage).__name__}, but the resolved run "
                           "has no such field (run/setup/resolved.py)")
    for name, value in decided.items():  # a validated copy, checked where it is decided
        try:
            values[name] = _field_type(name).validate_python(value)
        except ValidationError as exc:
            raise RuntimeError(f"prepare: {name} set by {type(stage).__name__} to {value!r}: "
                               f"{exc.errors()[0]['msg']}") from None
    for name, source in stage.sources.items():
        if source is None:
            sources.pop(name, None)
        else:
            sources[name] = source


@dataclass(frozen=True)
class BackendChoice:
    """Which backend runs (`--backend auto` resolved)."""

    backend: type[Backend]
    name: str
    sources: _Sources = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        return {"backend": self.name}


def _backend_choice(options: RunOptions, err: Any) -> BackendChoice:
    name = options.backend
    said: _Sources = {}
    if name == "auto":
        name, said["backend"] = auto_backend(script=options.script, replay=options.replay)
        if not (options.script or options.replay):  # an engine: say which and why before it loads
            print(f"backend: {name}, {said['backend']}", file=err)
    if name not in backend_names():
        raise RunError(f"--backend: unknown backend {name!r}; choose auto or one of {', '.join(backend_names())}")
    return BackendChoice(backend_class(name), name, said)


@dataclass(frozen=True)
class ProtocolChoice:
    """The protocol, once it and the backend accept the options, and the template's keyword arguments."""

    protocol: Protocol
    template_kwargs: dict[str, Any]
    sources: _Sources = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        return {"protocol": self.protocol.hash_value, "template_kwargs": self.template_kwargs}


def _protocol_choice(options: RunOptions, backend: type[Backend]) -> ProtocolChoice:
    protocol = protocol_named(options.protocol)
    try:
        protocol.check(options)
    except ValueError as exc:
        raise RunError(str(exc)) from None
    backend.check(options)
    given = {name: options.source(name) for name in ("thinking", "template_kwarg")}
    return ProtocolChoice(protocol, _template_kwargs(options),
                          {"template_kwargs": _joined(given, "thinking", "template_kwarg")})


@dataclass(frozen=True)
class ModelChoice:
    """The model's name in the run folder and the tables, this shard, and the dtype the weights load in."""

    model_name: str | None  # None: the name given stands
    shard: str | None
    resolved_dtype: str | None  # None: the backend loads no weights
    sources: _Sources = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        return {"shard": self.shard,
                **({"model_name": self.model_name} if self.model_name is not None else {}),
                **({"resolved_dtype": self.resolved_dtype} if self.resolved_dtype is not None else {})}


def _model_choice(values: dict[str, Any], sources: dict[str, str], backend: type[Backend], err: Any) -> ModelChoice:
    said: _Sources = {}
    name = None
    if not values.get("model_name"):
        from wtb_local.run.setup.naming import default_model_name  # deferred: start-up

        name = default_model_name(values["model"]) if values.get("model") else backend.name
        said["model_name"] = "the model id" if values.get("model") else "the backend name"
    shard = _shard(values.get("shard"))
    dtype = None
    if backend.capabilities.loads_weights:
        dtype, said["resolved_dtype"] = _dtype(values, sources, err)
    return ModelChoice(name, shard, dtype, said)


@dataclass(frozen=True)
class DatasetSelection:
    """The dataset file and its sha256, its sessions, and the ones this run (this shard) runs."""

    dataset_path: Path
    dataset_sha256: str
    sessions: list[Any]
    selected: list[Any]
    shard_record: ShardRecord | None  # --shard: this shard's sessions and the selection they come from
    sources: _Sources = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        return {"dataset_sha256": self.dataset_sha256}


def _dataset_selection(values: dict[str, Any], backend: type[Backend], err: Any) -> DatasetSelection:
    from wtb_local.benchmark.dataset import DatasetError, dataset_sha256, read_dataset, resolve_dataset

    try:
        dataset_path = resolve_dataset(values["dataset"])
        sessions, warnings = read_dataset(dataset_path)
    except DatasetError as exc:
        raise RunError(str(exc)) from None
    for warning in warnings:
        print(f"warning: {warning}", file=err)
    sha256 = dataset_sha256(dataset_path)
    from wtb_local.run.setup.selection import select_sessions  # deferred: start-up

    # `select` reads the values as they stand, the dataset's sha256 included
    selected = backend.select({**values, "dataset_sha256": sha256},
                              select_sessions(sessions, values["sessions"], values["limit"]), err)
    shard_record = None
    if values["shard"]:
        from wtb_local.run.setup.shards import parse_shard, shard_sessions  # deferred: start-up

        selected, shard_record = shard_sessions(selected, parse_shard(values["shard"]))
    return DatasetSelection(dataset_path, sha256, sessions, selected, shard_record)


@dataclass(frozen=True)
class TemplateChoice:
    """The renderer (tokenizer and chat template) and the hashes that pin it and the model."""

    renderer: Any
    note: str | None  # what the run does without a renderer, when it has none
    template_sha256: str | None
    resolved_revision: str | None
    tokenizer_sha256: str | None
    sources: _Sources = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        return {"template_sha256": self.template_sha256, "resolved_revision": self.resolved_revision,
                "tokenizer_sha256": self.tokenizer_sha256}


def _template_choice(values: dict[str, Any], caps: Any, renderer: Any, err: Any = None) -> TemplateChoice:
    renderer, note = _renderer(values, caps, renderer, err)
    return TemplateChoice(renderer, note, getattr(getattr(renderer, "choice", None), "sha256", None),
                          resolved_revision(values["model"], values["revision"]),
                          tokenizer_sha256(values["model"], values["revision"]))


@dataclass(frozen=True)
class ParserAndThinking:
    """The parser with its options, the effective thinking mode, and the generation budget it implies."""

    parser: Any
    parser_options: dict[str, Any]
    thinking: Any  # thinking.ThinkingMode
    max_new_tokens: int | None  # None: the budget given stands
    sources: _Sources = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        return {"parser_options": self.parser_options, "parser": getattr(self.parser, "name", None),
                "parser_version": getattr(self.parser, "version", None),  # vLLM's own parsers: vLLM's
                **({"max_new_tokens": self.max_new_tokens} if self.max_new_tokens is not None else {})}


def _parser_and_thinking(values: dict[str, Any], sources: dict[str, str], backend: type[Backend],
                         protocol: Protocol, renderer: Any) -> ParserAndThinking:
    said: _Sources = {}
    parser, parser_options = None, values["parser_options"]
    if backend.capabilities.parses_replies:
        from wtb_local.run.setup.parser_choice import choose_parser  # deferred: start-up

        name = values["parser"] or protocol.default_parser(values)
        if not values["parser"] and name:
            said["parser"] = f"protocol {protocol.name}"
        fallbacks: dict[str, str] = {}
        parser, parser_options = choose_parser(name, model=values["model"], renderer=renderer,
                                               options=parser_options, revision=values["revision"],
                                               trust_remote_code=values["trust_remote_code"],
                                               fallbacks=fallbacks)
        said.update(fallbacks)  # recorded in the manifest's sources, and said at start (_prepare)
        if said.get("parser", sources["parser"]) == "default":
            said["parser"] = "chosen from the template and model id"
    thinking = _thinking_mode({**values, "parser": getattr(parser, "name", None)}, backend, renderer)
    said["thinking (effective)"] = thinking.evidence
    budget = None
    if values["max_new_tokens"] is None:
        from wtb_local.run.setup.thinking import default_max_new_tokens  # deferred: start-up

        budget = default_max_new_tokens(thinking.effective)
        said["max_new_tokens"] = f"the default with thinking {'on' if thinking.effective else 'off'}"
    return ParserAndThinking(parser, parser_options, thinking, budget, said)


@dataclass(frozen=True)
class ProtocolApplied:
    """What the protocol replaced (renderer, parser, episodes) and its manifest section."""

    applied: ProtocolRun
    sources: _Sources = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        return {**({"template_sha256": self.applied.template_sha256} if self.applied.template_sha256 else {}),
                **({"parser": self.applied.parser_name} if self.applied.parser_name else {})}


def _protocol_applied(values: dict[str, Any], protocol: Protocol, caps: Any, renderer: Any, parser: Any,
                      selected: list[Any]) -> ProtocolApplied:
    try:
        return ProtocolApplied(protocol.apply(values, renderer=renderer, parser=parser, selected=selected,
                                              parses_replies=caps.parses_replies))
    except ValueError as exc:
        raise RunError(str(exc)) from None


@dataclass(frozen=True)
class EngineSettings:
    """The context window of an engine this run starts, the prompt checks and the render workers."""

    context: ContextRecord | None  # the window asked of the engine, and how
    default_max_model_len: int | None
    verify_prompts: Any
    on_prompt_mismatch: Any
    render_workers: Any
    sources: _Sources = field(default_factory=dict)

    def resolved(self) -> dict[str, Any]:
        return {**({"default_max_model_len": self.default_max_model_len}
                   if self.default_max_model_len is not None else {}),
                "verify_prompts": self.verify_prompts, "on_prompt_mismatch": self.on_prompt_mismatch,
                "render_workers": self.render_workers}


def _engine_settings(options: RunOptions, values: dict[str, Any], sources: dict[str, str],
                     backend: type[Backend], renderer: Any, selected: list[Any], engine: bool,
                     err: Any) -> EngineSettings:
    caps = backend.capabilities
    said = dict(sources)  # resolve_prompt_checks records its sources in the mapping it is given
    context, window = None, None
    if engine and caps.sizes_context:
        from wtb_local.run.setup.context_length import engine_context_length  # deferred: start-up

        context, window = engine_context_length(values, renderer, selected)
        if window is not None:
            said["max_model_len"] = context["how"]
    from wtb_local.formats.rendering.checks import resolve_prompt_checks

    verify, on_mismatch = resolve_prompt_checks(
        options.verify_prompts, options.on_prompt_mismatch, said, renderer=renderer,
        renders_prompts=caps.renders_prompts, given=options.given, err=err)
    from wtb_local.formats.rendering.pool import resolve_render_workers  # deferred: start-up

    workers, said["render_workers"] = resolve_render_workers(
        options.render_workers, said["render_workers"], renderer=renderer, backend=backend,
        episodes=sum(len(s.english_tasks) for s in selected), err=err)
    changed: _Sources = {name: source for name, source in said.items() if sources.get(name) != source}
    return EngineSettings(context, window, verify, on_mismatch, workers, changed)


_SAMPLED = ("temperature", "top_p", "max_new_tokens", "seed")


@dataclass(frozen=True)
class Sampling:
    """The sampling values as one `SamplingConfig`; their sources become `sampling.<name>`."""

    sampling: SamplingConfig
    sources: _Sources = field(default_factory=dict)
    dropped: tuple[str, ...] = _SAMPLED

    def resolved(self) -> dict[str, Any]:
        return {"sampling": self.sampling}


def _sampling(values: dict[str, Any], sources: dict[str, str]) -> Sampling:
    renamed: _Sources = {name: None for name in _SAMPLED}
    renamed.update({f"sampling.{name}": sources[name] for name in _SAMPLED})
    return Sampling(SamplingConfig(**{name: values[name] for name in _SAMPLED}), renamed)


_Stage = (BackendChoice | ProtocolChoice | ModelChoice | DatasetSelection | TemplateChoice | ParserAndThinking
          | ProtocolApplied | EngineSettings | Sampling)


def _dtype(values: dict[str, Any], sources: dict[str, str], err: Any) -> tuple[str, str]:
    """The dtype the engine loads the weights in, and its source; a choice other than the checkpoint's is
    said in one line."""
    from wtb_local.run.setup.dtype import checkpoint_dtype, resolve_dtype, this_device

    choice = resolve_dtype(values["dtype"], checkpoint_dtype(values["model"], values["revision"]), this_device(),
                           given=sources["dtype"])
    if choice.note:
        print(choice.note, file=err)
    return choice.dtype, choice.source


def _template_kwargs(options: RunOptions) -> dict[str, Any]:
    from wtb_local.formats.rendering.kwargs import resolve_template_kwargs  # deferred: start-up

    try:
        return resolve_template_kwargs(options.model or "", options.thinking, list(options.template_kwarg))
    except ValueError as exc:  # the message usually names its option already
        message = str(exc)
        raise RunError(message if message.startswith("--") else f"--template-kwarg: {message}") from None


def _joined(sources: dict[str, str], *names: str) -> str:
    given = [sources[name] for name in names if sources[name] != "default"]
    return ", ".join(given) if given else "default"


def _shard(spec: str | None) -> str | None:
    """`--shard auto` becomes this Slurm array task's `I/N`, so the shard's folder is known."""
    from wtb_local.run.setup.shards import ShardError, resolve_shard  # deferred: start-up

    try:
        shard = resolve_shard(spec)
    except ShardError as exc:
        raise RunError(str(exc)) from None
    return shard.spec if shard else None


def _renderer(values: dict[str, Any], caps: Any, renderer: Any, err: Any = None) -> tuple[Any, str | None]:
    """A backend that renders needs the renderer; one that uses it when on disk (the oracle) loads it from
    disk only, and says what it does without it (the manifest's `template_note`). A tokenizer on disk
    without a usable chat template is that too, said at start; any other error loading it stops the run
    with one line, since replies written by the parser's format can read back differently."""
    from wtb_local.formats.rendering.templates import TemplateError  # deferred: start-up
    from wtb_local.run.setup.tokenizer import load_renderer, tokenizer_on_disk  # deferred: start-up

    if renderer is not None or caps.needs_tokenizer == "no":
        return renderer, None
    kwargs = {"revision": values["revision"], "trust_remote_code": values["trust_remote_code"],
              "chat_template": values["chat_template"], "template_kwargs": values["template_kwargs"],
              "parser": values["parser"]}
    if caps.needs_tokenizer == "yes":
        return load_renderer(values["model"], **kwargs), None
    if not tokenizer_on_disk(values["model"], values["revision"]):
        return None, "no local tokenizer; replies written by the parser's format"
    try:
        return load_renderer(values["model"], local_only=True, **kwargs), None
    except TemplateError as exc:  # the tokenizer has no chat template to cut replies from
        note = (f"no chat template ({type(exc).__name__}: {' '.join(str(exc).split())}); replies written by "
                "the parser's format")
        print(f"warning: --model {values['model']}: {note}", file=err or sys.stderr)
        return None, note
    except Exception as exc:  # noqa: BLE001 - any other failure is said, never worked around
        raise RunError(f"--model {values['model']}: loading its tokenizer from disk failed ({type(exc).__name__}: "
                       f"{' '.join(str(exc).split())}); fix it, or pass --parser without --model to write replies "
                       "in the parser's format") from None


def _thinking_mode(values: dict[str, Any], backend: type[Backend], renderer: Any) -> Any:
    """The effective thinking mode: from the generation prompt; a replay keeps the recorded run's."""
    from wtb_local.run.setup.thinking import ThinkingMode, effective_thinking  # deferred: start-up

    if renderer is None:
        recorded = backend.recorded_thinking(values)
        if recorded is not None:
            return ThinkingMode(effective=recorded, evidence="the replayed run's", asked=values["thinking"])
    return effective_thinking(renderer, parser=values["parser"], model_id=values["model"] or "",
                              asked=values["thinking"])


def _unused_options(options: RunOptions, backend: type[Backend], err: Any) -> None:
    """Options given to a backend that cannot honour them, named in one line (they change nothing):
    sampling on a backend that does not sample, server options on one that is not such a server."""
    caps = backend.capabilities
    groups = [("does not sample", _SAMPLING_OPTIONS if not caps.samples else ()),
              ("is not a server", ("base_url", "served_model_name") if not caps.remote else ()),
              ("sends no rendered prompt to a server",
               ("server_prompt",) if not (caps.remote and caps.renders_prompts) else ())]
    clauses = []
    for why, names in groups:
        given = [f"{options.source(n).removeprefix('given (').removesuffix(')')} {getattr(options, n)}"
                 for n in names if n in options.given]
        if given:
            clauses.append(f"{why}: {', '.join(given)} change nothing")
    if clauses:
        print(f"warning: the {backend.name} backend {'; '.join(clauses)}", file=err)
