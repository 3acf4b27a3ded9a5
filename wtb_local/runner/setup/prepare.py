"""prepare: the user's options in, a frozen resolved run out (docs/architecture.md, "prepare").

Every value is decided here, once, with its source: the backend (asked what it needs, never tested by
name), the dataset and the sessions, the renderer and its template, the parser, the effective thinking
mode and the generation budget it implies, the protocol (which may replace the renderer, the parser and
the sampling, and says so), the context window and the run directory. Nothing is changed afterwards.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wtb_local.backends import Backend, SetupError, auto_backend, backend_class, backend_names
from wtb_local.protocols import protocol_named
from wtb_local.protocols.base import Protocol, ProtocolRun
from wtb_local.runner.errors import RunError
from wtb_local.runner.setup.environment import resolved_revision, tokenizer_sha256
from wtb_local.runner.setup.options import RunOptions, cli_fields
from wtb_local.runner.setup.paths import RunPaths, run_paths
from wtb_local.runner.setup.resolved import ResolvedRun
from wtb_local.schema import SamplingConfig

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
    shard: dict[str, Any] | None  # --shard: this shard's sessions and the selection they come from
    protocol: Protocol
    applied: ProtocolRun  # the protocol's renderer, parser, episodes and manifest section
    backend_class: type[Backend]
    context_length: dict[str, Any] | None  # the window asked of an engine this run starts, and how

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
    values: dict[str, Any] = {name: getattr(options, name) for name in cli_fields()}
    sources = {name: options.source(name) for name in cli_fields()}
    backend = _backend(options, values, sources)
    protocol = protocol_named(options.protocol)
    try:
        protocol.check(options)
    except ValueError as exc:
        raise RunError(str(exc)) from None
    values["protocol"] = protocol.hash_value
    backend.check(options)
    values["template_kwargs"] = _template_kwargs(options)
    sources["template_kwargs"] = _joined(sources, "thinking", "template_kwarg")
    values["sessions"] = list(options.sessions) if options.sessions is not None else None
    values["parser_options"] = {}
    caps = backend.capabilities
    if not (caps.remote and caps.renders_prompts):  # only a server taking rendered prompts has a format
        values["server_prompt"] = None
    backend.resolve(values, sources, err)
    if not values.get("model_name"):
        from wtb_local.runner.setup.naming import default_model_name

        values["model_name"] = default_model_name(values["model"]) if values.get("model") else backend.name
        sources["model_name"] = "the model id" if values.get("model") else "the backend name"
    values["shard"] = _shard(values.get("shard"))
    if caps.loads_weights:
        _dtype(values, sources, err)

    from wtb_local.dataset import DatasetError, dataset_sha256, read_dataset, resolve_dataset

    try:
        dataset_path = resolve_dataset(values["dataset"])
        sessions, warnings = read_dataset(dataset_path)
    except DatasetError as exc:
        raise RunError(str(exc)) from None
    for warning in warnings:
        print(f"warning: {warning}", file=err)
    values["dataset_sha256"] = dataset_sha256(dataset_path)
    from wtb_local.runner.setup.selection import select_sessions

    selected = backend.select(values, select_sessions(sessions, values["sessions"], values["limit"]), err)
    shard_record = None
    if values["shard"]:
        from wtb_local.runner.setup.shards import parse_shard, shard_sessions

        selected, shard_record = shard_sessions(selected, parse_shard(values["shard"]))

    renderer, note = _renderer(values, caps, renderer)
    values["template_sha256"] = getattr(getattr(renderer, "choice", None), "sha256", None)
    values["resolved_revision"] = resolved_revision(values["model"], values["revision"])
    values["tokenizer_sha256"] = tokenizer_sha256(values["model"], values["revision"])
    parser = None
    if caps.parses_replies:
        from wtb_local.runner.setup.parser_choice import choose_parser

        name = values["parser"] or protocol.default_parser(values)
        if not values["parser"] and name:
            sources["parser"] = f"protocol {protocol.name}"
        parser, values["parser_options"] = choose_parser(name, model=values["model"], renderer=renderer,
                                                         options=values["parser_options"])
        if sources["parser"] == "default":
            sources["parser"] = "chosen from the template and model id"
    values["parser"] = getattr(parser, "name", None)
    thinking = _thinking_mode(values, backend, renderer)
    sources["thinking (effective)"] = thinking.evidence
    if values["max_new_tokens"] is None:
        from wtb_local.runner.setup.thinking import default_max_new_tokens

        values["max_new_tokens"] = default_max_new_tokens(thinking.effective)
        sources["max_new_tokens"] = f"the default with thinking {'on' if thinking.effective else 'off'}"
    protocol.sampling(values, sources, options, err)
    _unused_options(options, backend, err)
    try:
        applied = protocol.apply(values, renderer=renderer, parser=parser, selected=selected,
                                 parses_replies=caps.parses_replies)
    except ValueError as exc:
        raise RunError(str(exc)) from None
    renderer, parser = applied.renderer, applied.parser
    if applied.template_sha256:
        values["template_sha256"] = applied.template_sha256
    if applied.parser_name:
        values["parser"] = applied.parser_name
    context = None
    if engine and caps.sizes_context:
        from wtb_local.runner.setup.context_length import engine_context_length

        context, values["default_max_model_len"] = engine_context_length(values, renderer, selected)
        if values["default_max_model_len"] is not None:
            sources["max_model_len"] = context["how"]
    from wtb_local.rendering.checks import resolve_prompt_checks

    values["verify_prompts"], values["on_prompt_mismatch"] = resolve_prompt_checks(
        options.verify_prompts, options.on_prompt_mismatch, sources, renderer=renderer,
        renders_prompts=caps.renders_prompts, given=options.given, err=err)
    from wtb_local.rendering.pool import resolve_render_workers

    values["render_workers"], sources["render_workers"] = resolve_render_workers(
        options.render_workers, sources["render_workers"], renderer=renderer, backend=backend,
        episodes=sum(len(s.english_tasks) for s in selected), err=err)
    values["sampling"] = SamplingConfig(temperature=values.pop("temperature"), top_p=values.pop("top_p"),
                                        max_new_tokens=values.pop("max_new_tokens"), seed=values.pop("seed"))
    for name in ("temperature", "top_p", "max_new_tokens", "seed"):
        sources[f"sampling.{name}"] = sources.pop(name)
    run = ResolvedRun(**{k: v for k, v in values.items() if k in ResolvedRun.model_fields}, sources=sources)
    paths = run_paths(run)
    # A fresh run into the replayed directory would truncate the very file being replayed.
    if run.replay and paths.result_file.resolve() == Path(run.replay).resolve():
        raise RunError(f"--replay: {run.replay} is the result file this run writes; pass another --out")
    return PreparedRun(run, paths, dataset_path, sessions, selected, renderer, parser, note, thinking,
                       shard_record, protocol, applied, backend, context)


def _backend(options: RunOptions, values: dict[str, Any], sources: dict[str, str]) -> type[Backend]:
    name = options.backend
    if name == "auto":
        name, sources["backend"] = auto_backend(script=options.script, replay=options.replay)
    if name not in backend_names():
        raise RunError(f"--backend: unknown backend {name!r}; choose auto or one of {', '.join(backend_names())}")
    values["backend"] = name
    return backend_class(name)


def _dtype(values: dict[str, Any], sources: dict[str, str], err: Any) -> None:
    """The dtype the engine loads the weights in; a choice other than the checkpoint's is said in one line."""
    from wtb_local.runner.setup.dtype import checkpoint_dtype, resolve_dtype, this_device

    choice = resolve_dtype(values["dtype"], checkpoint_dtype(values["model"], values["revision"]), this_device(),
                           given=sources["dtype"])
    values["resolved_dtype"], sources["resolved_dtype"] = choice.dtype, choice.source
    if choice.note:
        print(choice.note, file=err)


def _template_kwargs(options: RunOptions) -> dict[str, Any]:
    from wtb_local.rendering.kwargs import resolve_template_kwargs

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
    from wtb_local.runner.setup.shards import ShardError, resolve_shard

    try:
        shard = resolve_shard(spec)
    except ShardError as exc:
        raise RunError(str(exc)) from None
    return shard.spec if shard else None


def _renderer(values: dict[str, Any], caps: Any, renderer: Any) -> tuple[Any, str | None]:
    """A backend that renders needs the renderer; one that uses it when on disk (the oracle) loads it from
    disk only, and says what it does without it."""
    from wtb_local.runner.setup.tokenizer import load_renderer, tokenizer_on_disk

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
    except Exception as exc:  # noqa: BLE001 - no usable tokenizer: the parser's format writes replies
        return None, f"no chat template ({type(exc).__name__}); replies written by the parser's format"


def _thinking_mode(values: dict[str, Any], backend: type[Backend], renderer: Any) -> Any:
    """The effective thinking mode: from the generation prompt; a replay keeps the recorded run's."""
    from wtb_local.runner.setup.thinking import ThinkingMode, effective_thinking

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
