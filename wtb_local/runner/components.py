"""Setting up a run: resolved settings, the selected sessions, the prompt renderer, the tool-call parser
and the backend (engine flags mirror vLLM's)."""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wtb_local.backends.base import Backend
from wtb_local.runner.config import RunSettings
from wtb_local.runner.environment import default_backend, resolved_revision, tokenizer_sha256
from wtb_local.runner.errors import RunError
from wtb_local.runner.paths import run_paths

# need a renderer (prompt) and a parser; instant: the runner's own ceiling, docs/runner-speed.md §1
_TEXT_BACKENDS = ("vllm", "transformers", "openai", "instant")


def select_sessions(sessions: list[Any], ids: list[str] | None, limit: int | None) -> list[Any]:
    """`--sessions` (ids or bare numbers, in dataset order) then `--limit N` (the first N of those)."""
    chosen = sessions
    if ids:
        wanted = {i if not i.isdigit() else f"wild_tool_bench_{i}" for i in (x.strip() for x in ids) if i}
        known = {s.id for s in sessions}
        missing = sorted(wanted - known)
        if missing:
            raise RunError(f"--sessions: not in the dataset: {', '.join(missing)}")
        chosen = [s for s in sessions if s.id in wanted]
    if limit is not None:
        if limit < 1:  # 0 sessions would write an empty run and a 0% row
            raise RunError(f"--limit {limit}: must be at least 1")
        chosen = chosen[:limit]
    return chosen


def _file_sha256(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise RunError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _local_config(model: str | None) -> dict[str, Any] | None:
    if not model:
        return None
    path = Path(model) / "config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, json.JSONDecodeError):
        return None


def load_renderer(settings: RunSettings, *, local_only: bool = False) -> Any:
    """The model's prompt renderer; `local_only`: from a local directory or the hub cache, no network."""
    from wtb_local.rendering.renderer import PromptRenderer
    from wtb_local.rendering.templates import TemplateError

    if not settings.model:
        raise RunError(f"--backend {settings.backend} needs --model")
    if not local_only:
        try:
            return PromptRenderer.from_pretrained(
                settings.model, revision=settings.revision, trust_remote_code=settings.trust_remote_code,
                chat_template=settings.chat_template, template_kwargs=settings.template_kwargs,
                parser=settings.parser)
        except TemplateError:
            raise
        except Exception as exc:  # noqa: BLE001 - hub, file and tokenizer errors all mean "no tokenizer"
            # transformers' messages span several lines; the CLI's errors are one line.
            raise RunError(f"--model {settings.model}: cannot load the tokenizer: "
                           f"{' '.join(str(exc).split())}") from None
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(settings.model, revision=settings.revision,
                                              trust_remote_code=settings.trust_remote_code,
                                              local_files_only=True)
    return PromptRenderer(tokenizer, model_id=settings.model, chat_template=settings.chat_template,
                          template_kwargs=settings.template_kwargs, parser=settings.parser)


def _tokenizer_on_disk(settings: RunSettings) -> bool:
    """A local model directory, or a hub id whose tokenizer is in the local hub cache."""
    if not settings.model:
        return False
    if Path(settings.model).is_dir():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(settings.model, "tokenizer_config.json",
                                                 revision=settings.revision), str)
    except Exception:  # noqa: BLE001 - an id the hub library rejects is simply not on disk
        return False


def choose_parser(settings: RunSettings, renderer: Any) -> Any:
    from wtb_local.parsers import get_parser, select_parser

    name = settings.parser
    if name and name.startswith("paper:"):  # a recorded paper-protocol run (replay): its family's parser
        from wtb_local.protocols.parse_rules import native_parser_name

        name = native_parser_name(name)
    if not name and settings.protocol == "paper":  # a documented family's rule replaces the parser anyway
        from wtb_local.protocols.setup import documented_parser_name

        name = documented_parser_name(settings)
    if not name:
        if not settings.model:
            raise RunError("--model is needed to choose a tool-call parser (or pass --parser)")
        template = getattr(renderer, "template", None) if renderer is not None else None
        try:
            name = select_parser(settings.model, chat_template=template, config=_local_config(settings.model))
        except ValueError as exc:
            raise RunError(str(exc)) from None
    options = settings.parser_options or _prefill_options(renderer, name)
    settings.parser_options = dict(options)
    try:
        return get_parser(name, **options)
    except ValueError as exc:
        raise RunError(f"--parser: {exc}") from None


def _prefill_options(renderer: Any, parser_name: str) -> dict[str, Any]:
    """Rendered prompts that may open a reasoning block (the probe's does, or the family reads every
    completion as reasoning by default) decide the pre-fill per step, from each step's own prompt: R1-Distill
    pre-fills `<think>` after a user turn, not after tool results (parsers/prefill.py)."""
    from wtb_local.parsers import parser_class
    from wtb_local.parsers.prefill import PER_STEP

    if renderer is None:
        return {}
    try:
        family_thinks = getattr(parser_class(parser_name), "thinking", None) is True
    except ValueError:
        family_thinks = False
    return {"thinking": PER_STEP} if family_thinks or prefills_reasoning(renderer) else {}


def prefills_reasoning(renderer: Any) -> bool:
    """Whether the generation prompt ends inside an opened reasoning block (R1, Qwen3-Thinking-2507, ...).
    Then a completion cut at the token limit before `</think>` is reasoning, not a final text answer."""
    from wtb_local.runner.thinking import ends_in_open_reasoning, generation_prompt

    if renderer is None:
        return False
    try:
        text = generation_prompt(renderer)
    except Exception:  # noqa: BLE001 - the probe at start-up already reported template problems
        return False
    return ends_in_open_reasoning(text)


def build_backend(settings: RunSettings, *, parser: Any, renderer: Any) -> Backend:
    from wtb_local.backends import backend_class

    name = settings.backend
    if name == "scripted":
        if not settings.script:
            raise RunError("--backend scripted needs --script FILE")
        return backend_class("scripted")(settings.script)
    if name == "replay":
        if not settings.replay:
            raise RunError("--backend replay needs --replay RUN_DIR_OR_RESULT_FILE")
        try:
            return backend_class("replay")(settings.replay)
        except ValueError as exc:
            raise RunError(f"--replay: {exc}") from None
    if name in ("oracle", "instant"):
        return backend_class(name)(settings.model, parser=parser, renderer=renderer)
    if not settings.model:
        raise RunError(f"--backend {name} needs --model")
    if name == "vllm":
        from wtb_local.backends.config import VLLMConfig

        return backend_class(name)(VLLMConfig(
            model=settings.model, revision=settings.revision, dtype=settings.dtype,
            tensor_parallel_size=settings.tensor_parallel_size,
            pipeline_parallel_size=settings.pipeline_parallel_size,
            max_model_len=settings.max_model_len or settings.default_max_model_len,
            data_parallel_size=settings.data_parallel_size,
            distributed_executor_backend=settings.distributed_executor_backend,
            gpu_memory_utilization=settings.gpu_memory_utilization, quantization=settings.quantization,
            trust_remote_code=settings.trust_remote_code, max_num_seqs=settings.max_num_seqs,
            max_num_batched_tokens=settings.max_num_batched_tokens,
            enable_prefix_caching=settings.enable_prefix_caching,
            enforce_eager=settings.enforce_eager, seed=settings.seed))
    if name == "transformers":
        from wtb_local.backends.config import TransformersConfig

        return backend_class(name)(TransformersConfig(
            model=settings.model, revision=settings.revision, dtype=settings.dtype,
            trust_remote_code=settings.trust_remote_code, batch_size=settings.batch_size,
            max_model_len=settings.max_model_len))
    if name in ("openai", "openai-chat"):
        from wtb_local.backends.config import OpenAIConfig

        if not settings.base_url:
            raise RunError(f"--backend {name} needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        config = OpenAIConfig(base_url=settings.base_url, model=settings.model, api_key=settings.api_key,
                              max_concurrency=settings.max_num_seqs or 64, max_model_len=settings.max_model_len,
                              prompt_format=settings.server_prompt or "token-ids", revision=settings.revision)
        if name == "openai-chat":  # the server renders: the thinking switch goes as chat_template_kwargs
            return backend_class(name)(config, template_kwargs=settings.template_kwargs)
        return backend_class(name)(config)
    raise RunError(f"unknown backend {name!r}")


def resolve_settings(settings: RunSettings) -> RunSettings:
    """Fill what the options leave open: backend, model name, the replayed file."""
    settings = settings.model_copy(deep=True)
    from wtb_local.backends import backend_names

    if settings.backend == "auto":
        settings.backend = "scripted" if settings.script else "replay" if settings.replay else default_backend()
    if settings.backend not in backend_names():
        raise RunError(f"--backend: unknown backend {settings.backend!r}; choose auto or one of "
                       f"{', '.join(backend_names())}")
    if settings.backend == "scripted" and settings.script:
        settings.script_sha256 = _file_sha256(settings.script)
    _preflight(settings)
    if settings.backend == "replay":
        _recorded_model(settings)
    # Only server mode sends prompts over the wire; other backends record none.
    settings.server_prompt = (settings.server_prompt or "token-ids") if settings.backend == "openai" else None
    if not settings.model_name:
        from wtb_local.runner.naming import default_model_name

        settings.model_name = default_model_name(settings.model) if settings.model else settings.backend
    _resolve_shard(settings)
    if settings.backend == "replay":
        _resolve_replay(settings)
    return settings


def _preflight(settings: RunSettings) -> None:
    """Cheap checks before the dataset is fetched and the tokenizer loaded (preflight.py)."""
    from wtb_local.runner import preflight

    name = settings.backend
    preflight.require_backend_packages(name)
    if name in _TEXT_BACKENDS and not settings.model:
        raise RunError(f"--backend {name} needs --model")
    if name == "oracle" and not settings.model and not settings.parser:
        raise RunError("--backend oracle needs --model (or --parser) to write replies in a model's format")
    if name == "openai-chat" and not settings.model:
        raise RunError(f"--backend {name} needs --model (the name the server serves)")
    if name in ("openai", "openai-chat"):
        if not settings.base_url:
            raise RunError(f"--backend {name} needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        preflight.require_server(settings.base_url, settings.api_key)
    if name in _TEXT_BACKENDS:
        preflight.require_hub(settings.model, settings.revision)


def _recorded_model(settings: RunSettings) -> None:
    """A replay without --model takes the model (and its name) the recorded run used."""
    from wtb_local.runner.naming import read_run_manifest, recorded_model

    if settings.model or not settings.replay:
        return
    manifest = read_run_manifest(settings.replay)
    if manifest is None:  # a reference result file: the rows' model name is used, the parser must be given
        return
    settings.model, name = recorded_model(manifest)
    settings.model_name = settings.model_name or name


def _resolve_shard(settings: RunSettings) -> None:
    """`--shard auto` becomes this Slurm array task's `I/N`, so the shard's folder is known."""
    from wtb_local.runner.shards import ShardError, resolve_shard

    try:
        shard = resolve_shard(settings.shard)
    except ShardError as exc:
        raise RunError(str(exc)) from None
    settings.shard = shard.spec if shard else None


def _resolve_replay(settings: RunSettings) -> None:
    """The replayed result file, its hash and the parser the recorded run used (or --parser) with the recorded
    options that still apply."""
    from wtb_local.backends.replay import ReplayError, find_result_file, load_recording, replay_parser

    if not settings.replay:
        raise RunError("--backend replay needs --replay RUN_DIR_OR_RESULT_FILE")
    try:
        result_file = find_result_file(settings.replay, settings.model_name)
        load_recording(result_file)  # a malformed file is refused before anything is written
    except ReplayError as exc:
        raise RunError(f"--replay: {exc}") from None
    settings.replay = str(result_file)
    settings.replay_sha256 = _file_sha256(settings.replay)
    # --parser X keeps the recorded options that still apply (the prompt's pre-fill)
    settings.parser, settings.parser_options = replay_parser(result_file, settings.parser, settings.parser_options)
    # A fresh run into the replayed directory would truncate the very file being replayed.
    if run_paths(settings).result_file.resolve() == result_file.resolve():
        raise RunError(f"--replay: {result_file} is the result file this run writes; pass another --out")


def _recorded_only(settings: RunSettings, selected: list[Any], stderr: Any) -> list[Any]:
    """A replay without --sessions/--limit replays the sessions the recording holds: a recorded partial run
    (`--limit 2`) would otherwise score every other session as all-error tasks."""
    from wtb_local.backends.replay import load_recording

    recorded = {key[0] for key in load_recording(str(settings.replay))}
    kept = [session for session in selected if session.id in recorded]
    if len(kept) < len(selected):
        print(f"replay: {len(kept)} of the dataset's {len(selected)} sessions are recorded in {settings.replay}; "
              "replaying those (--sessions or --limit choose others)", file=stderr or sys.stderr)
    return kept


@dataclass
class PreparedRun:
    """Everything decided before the first request: resolved settings, sessions, renderer, parser."""

    settings: RunSettings
    dataset_path: Path
    sessions: list[Any]
    selected: list[Any]
    renderer: Any
    parser: Any
    renderer_note: str | None
    thinking: Any = None  # thinking.ThinkingMode: the effective mode, decided by the prompt
    shard: dict[str, Any] | None = None  # --shard: this shard's sessions and the selection they come from


def prepare_run(settings: RunSettings, renderer: Any = None, stderr: Any = None) -> PreparedRun:
    """Resolve the settings, load and select the dataset, load the renderer and choose the parser."""
    from wtb_local.dataset import DatasetError, dataset_sha256, read_dataset, resolve_dataset

    settings = resolve_settings(settings)
    try:
        dataset_path = resolve_dataset(settings.dataset)
        sessions, warnings = read_dataset(dataset_path)
    except DatasetError as exc:
        raise RunError(str(exc)) from None
    for warning in warnings:
        print(f"warning: {warning}", file=stderr or sys.stderr)
    settings.dataset_sha256 = dataset_sha256(dataset_path)
    selected = select_sessions(sessions, settings.sessions, settings.limit)
    if settings.backend == "replay" and settings.sessions is None and settings.limit is None:
        selected = _recorded_only(settings, selected, stderr)
    shard_record = None
    if settings.shard:
        from wtb_local.runner.shards import parse_shard, shard_sessions

        selected, shard_record = shard_sessions(selected, parse_shard(settings.shard))

    # A text backend needs the renderer; the oracle uses the template when a tokenizer is on disk.
    note = None
    if renderer is None and settings.backend in _TEXT_BACKENDS:
        renderer = load_renderer(settings)
    elif renderer is None and settings.backend == "oracle" and not _tokenizer_on_disk(settings):
        note = "no local tokenizer; replies written by the parser's format"
    elif renderer is None and settings.backend == "oracle":
        try:
            renderer = load_renderer(settings, local_only=True)
        except Exception as exc:  # noqa: BLE001 - no usable tokenizer: the parser's format writes replies
            note = f"no chat template ({type(exc).__name__}); replies written by the parser's format"
    settings.template_sha256 = getattr(getattr(renderer, "choice", None), "sha256", None)
    settings.resolved_revision = resolved_revision(settings.model, settings.revision)
    settings.tokenizer_sha256 = tokenizer_sha256(settings.model, settings.revision)
    # the scripted backend replays parsed replies, the openai-chat server parses its own output
    parser = choose_parser(settings, renderer) if settings.backend not in ("scripted", "openai-chat") else None
    settings.parser = getattr(parser, "name", None)
    thinking = _thinking_mode(settings, renderer)
    if settings.max_new_tokens_by_mode:
        from wtb_local.runner.thinking import default_max_new_tokens

        settings.sampling.max_new_tokens = default_max_new_tokens(thinking.effective)
    return PreparedRun(settings, dataset_path, sessions, selected, renderer, parser, note, thinking,
                       shard=shard_record)


def _thinking_mode(settings: RunSettings, renderer: Any) -> Any:
    """The effective thinking mode: from the generation prompt; a replay keeps the recorded run's."""
    from wtb_local.runner.manifest import MANIFEST_NAME
    from wtb_local.runner.thinking import ThinkingMode, effective_thinking, recorded_thinking

    if settings.backend == "replay" and settings.replay and renderer is None:
        try:
            manifest = json.loads((Path(settings.replay).resolve().parents[2] / MANIFEST_NAME).read_text("utf-8"))
        except (OSError, ValueError, IndexError):
            manifest = None
        recorded = recorded_thinking(manifest if isinstance(manifest, dict) else None)
        if recorded is not None:
            return ThinkingMode(effective=recorded, evidence="the replayed run's", asked=settings.thinking)
    return effective_thinking(renderer, parser=settings.parser, model_id=settings.model or "",
                              asked=settings.thinking)
