"""What a factor is and where it is read from: the one table `explain` compares runs by.

Each factor is read from a run's records (docs/files.md, "Manifest") and belongs to the stage of a step
it acts on first:

- `tasks`: which tasks were run (the dataset);
- `prompt`: what the model is shown (template, its kwargs, tokenizer, thinking mode, protocol);
- `completion`: what the model writes for a prompt (model, revision, dtype, engine and its version,
  sampling, max new tokens, seed, context window);
- `parse`: how the completion is read (parser);
- `verdict`: how the calls are judged (argument checker, and the evaluator's version).

Generation factors are read from the run that generated the completions: a replay's (`--backend replay`)
are those of the run it replays, followed through the replay's recorded source, since its completions are
that run's. Its parser and checker are its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from wtb_local.contract.manifest import Manifest
from wtb_local.contract.run_dir import as_manifest

STAGES = ("tasks", "prompt", "completion", "parse", "verdict")
_SHORT = 12  # hashes are shown by their first 12 hex digits


@dataclass(frozen=True)
class RunRecords:
    """The records a run's factors are read from."""

    manifest: Manifest  # the run's own manifest
    generation: Manifest  # the manifest of the run whose completions these are (itself unless a replay)
    checker: str  # the argument checker of the verdicts compared

    def __post_init__(self) -> None:  # a manifest given as the dict a run wrote is read through its model
        for name in ("manifest", "generation"):
            object.__setattr__(self, name, as_manifest(getattr(self, name)) or Manifest())


@dataclass(frozen=True)
class Factor:
    name: str
    stage: str
    source: str  # where it is read, as the output names it
    read: Callable[[RunRecords], str]


def _short(value: Any) -> str:
    return str(value)[:_SHORT] if value else "none"


def _text(value: Any) -> str:
    if value is None or value == "" or value == {}:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def _model(r: RunRecords) -> str:
    return _text(r.generation.config.model)


def _revision(r: RunRecords) -> str:
    config = r.generation.config
    return _text(config.resolved_revision or config.revision)


def _tokenizer(r: RunRecords) -> str:
    return _short(r.generation.config.tokenizer_sha256)


def _dtype(r: RunRecords) -> str:
    """The dtype the weights ran in, as recorded: `settings.resolved_dtype` (what `--dtype auto` became,
    docs/real-model.md §3), else the backend's own record, else the dtype as asked (older manifests)."""
    config = r.generation.config
    ran = (r.generation.settings.resolved_dtype or r.generation.backend.settings.dtype
           or config.dtype)
    return _text(ran) + (f", {config.quantization}" if config.quantization else "")


def _engine(r: RunRecords) -> str:
    return _text(r.generation.config.backend)


def _engine_version(r: RunRecords) -> str:
    described = r.generation.backend
    parts = [f"{name} {value}" for name, value in described.versions()]
    if described.device:
        parts.append(f"device {described.device}")
    return ", ".join(parts) or "none"


def _template(r: RunRecords) -> str:
    config, template = r.generation.config, r.generation.template
    sha = config.template_sha256 or template.sha256
    if not sha:
        return "none"
    source = template.source or config.chat_template or "template"
    return f"{source} {_short(sha)}"


def _template_kwargs(r: RunRecords) -> str:
    return _text(r.generation.config.template_kwargs)


def _thinking(r: RunRecords) -> str:
    effective = r.generation.thinking.effective
    if effective is None:
        return "unknown"
    return "on" if effective else "off"


def _protocol(r: RunRecords) -> str:
    name = r.generation.protocol_name or "release"
    family = r.generation.protocol.family.name
    return f"{name} ({family})" if family else str(name)


def _parser(r: RunRecords) -> str:
    options = r.manifest.parser_options
    return _text(r.manifest.parser_name) + (f" {_text(options)}" if options else "")


def _parser_implementation(r: RunRecords) -> str:
    """Whose code read the replies, and which version: wtb_local's own parsers or vLLM's (`vllm:NAME`)."""
    parser = r.manifest.versions.parser
    version = parser.version or r.manifest.config.parser_version
    if not parser and not version:
        return "unknown"
    return f"{_text(parser.implementation)} {_text(version)}"


def _constrained(r: RunRecords) -> str:
    return _text(r.generation.versions.engine.constrained_decoding)


def _checker(r: RunRecords) -> str:
    return r.checker


def _sampling(r: RunRecords) -> str:
    used = r.generation.sampling_used
    shown = {k: v for k, v in used.written().items() if k not in ("max_new_tokens", "seed")}  # factors of their own
    if set(shown) <= {"source"}:
        if used.source:
            return used.source
        sampling = r.generation.config.sampling
        return _text({"temperature": sampling.temperature, "top_p": sampling.top_p})
    return ", ".join(f"{k} {_text(v)}" for k, v in shown.items())


def _max_new_tokens(r: RunRecords) -> str:
    return _text(r.generation.config.sampling.max_new_tokens)


def _seed(r: RunRecords) -> str:
    return _text(r.generation.config.sampling.seed)


def _context(r: RunRecords) -> str:
    chosen = r.generation.context_length.value
    return _text(chosen if chosen is not None else r.generation.config.max_model_len)


def _dataset(r: RunRecords) -> str:
    return _short(r.manifest.config.dataset_sha256)


def _evaluator(r: RunRecords) -> str:
    record = r.manifest.wtb_local
    text = _text(record.version)
    if record.git_commit:
        text += f" ({_short(record.git_commit)}{', uncommitted changes' if record.git_dirty else ''})"
    return text


FACTORS: tuple[Factor, ...] = (
    Factor("dataset", "tasks", "config.dataset_sha256", _dataset),
    Factor("template", "prompt", "template.source, config.template_sha256", _template),
    Factor("template kwargs", "prompt", "config.template_kwargs", _template_kwargs),
    Factor("tokenizer", "prompt", "config.tokenizer_sha256", _tokenizer),
    Factor("thinking", "prompt", "thinking.effective", _thinking),
    Factor("protocol", "prompt", "protocol.name, protocol.family", _protocol),
    Factor("model", "completion", "config.model", _model),
    Factor("revision", "completion", "config.resolved_revision (else config.revision)", _revision),
    Factor("dtype / quantization", "completion",
           "settings.resolved_dtype (else backend.settings.dtype, config.dtype), config.quantization", _dtype),
    Factor("engine", "completion", "config.backend", _engine),
    Factor("engine version", "completion", "backend.*_version, backend.device", _engine_version),
    Factor("constrained decoding", "completion", "versions.engine.constrained_decoding", _constrained),
    Factor("sampling", "completion", "sampling_used (else config.sampling)", _sampling),
    Factor("max new tokens", "completion", "config.sampling.max_new_tokens", _max_new_tokens),
    Factor("seed", "completion", "config.sampling.seed", _seed),
    Factor("context window", "completion", "context_length.value (else config.max_model_len)", _context),
    Factor("parser", "parse", "config.parser, parser_options", _parser),
    Factor("parser implementation", "parse", "versions.parser (else config.parser_version)", _parser_implementation),
    Factor("checker", "verdict", "protocol.checker (a re-scoring's own)", _checker),
    Factor("evaluator", "verdict", "wtb_local.version, wtb_local.git_commit", _evaluator),
)


def factor(name: str) -> Factor:
    for item in FACTORS:
        if item.name == name:
            return item
    raise KeyError(name)


def read_factors(records: RunRecords) -> dict[str, str]:
    """Every factor's value for one run, in table order."""
    return {item.name: item.read(records) for item in FACTORS}


def differing(values: Sequence[dict[str, str]], stage: str | None = None) -> list[str]:
    """The factors whose value is not the same in every run (of one stage, when given), in table order."""
    return [item.name for item in FACTORS
            if (stage is None or item.stage == stage) and len({v[item.name] for v in values}) > 1]
