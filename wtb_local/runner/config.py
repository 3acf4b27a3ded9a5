"""Run settings, the subset of them that decides the results, and its hash.

A run directory records the hashed settings in its manifest; resuming into that directory is allowed
only when they are equal, so finished sessions are never mixed with sessions produced under other
settings. Operational knobs (output folder, selection, parallelism, memory) are left out of the hash:
they change how fast a run goes, not what it produces.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, Field

from wtb_local.schema import SamplingConfig

# Settings that decide what the model sees and how its replies are read and sampled.
HASHED_FIELDS: tuple[str, ...] = (
    "model",
    "model_name",
    "backend",
    "revision",
    "resolved_revision",
    "tokenizer_sha256",
    "parser",
    "chat_template",
    "template_sha256",
    "template_kwargs",
    "sampling",
    "dataset_sha256",
    "dtype",
    "quantization",
    "max_model_len",
    "script_sha256",
    "replay_sha256",
    "server_prompt",
    "protocol",
    "paper_family",
)
# Hashed fields added after run directories had been written: left out while unset, so those runs'
# hashes stay the same and they can still be resumed.
_HASHED_WHEN_SET = frozenset({"replay_sha256", "server_prompt", "protocol", "paper_family"})


class RunSettings(BaseModel):
    """Everything `run` was asked to do, after defaults are resolved."""

    model: str | None = None
    model_name: str | None = None  # default: the model id (or the backend name)
    backend: str = "auto"
    base_url: str | None = None
    server_prompt: str | None = None  # openai backend: token-ids (default) | text; None for other backends
    api_key: str | None = Field(default=None, exclude=True)  # never written to disk
    parser: str | None = None
    # e.g. {"thinking": true} when the generation prompt pre-fills <think>; recorded so replays parse alike
    parser_options: dict[str, Any] = Field(default_factory=dict)
    chat_template: str | None = None
    thinking: bool | None = None  # as asked (--thinking/--no-thinking); the effective mode is in the manifest
    template_kwargs: dict[str, Any] = Field(default_factory=dict)
    dataset: str = "release"
    script: str | None = None
    replay: str | None = None  # replay backend: the recorded result file (a run directory is resolved to it)
    out: str | None = None
    limit: int | None = None
    sessions: list[str] | None = None
    shard: str | None = None  # "I/N" once resolved (`auto` reads the Slurm array task); not hashed
    resume: bool = True
    overwrite: bool = False
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    # No --max-new-tokens given: sampling.max_new_tokens is set from the effective thinking mode (thinking.py)
    max_new_tokens_by_mode: bool = False
    revision: str | None = None
    trust_remote_code: bool = False
    dtype: str = "auto"
    quantization: str | None = None
    max_model_len: int | None = None
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int | None = None  # vLLM's own data parallelism (engine replicas) on one node
    distributed_executor_backend: str | None = None  # vLLM's; "ray" spans nodes (docs/multinode.md §2)
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enable_prefix_caching: bool = True  # vLLM; not hashed: numerics only (docs/reproducibility.md)
    enforce_eager: bool = False
    batch_size: int = 16
    scheduling: str = "auto"  # auto | continuous | waves
    progress: str = "auto"  # auto | rich | plain | none
    protocol: str | None = None  # None: release (the default, unhashed); "paper": wtb_local.protocols
    paper_family: str | None = None  # --protocol paper: the family rule (default: from the model id)
    # filled while the run is prepared
    template_sha256: str | None = None
    resolved_revision: str | None = None  # the hub commit the model id resolved to (from the local cache)
    tokenizer_sha256: str | None = None  # of the tokenizer files on disk
    dataset_sha256: str | None = None
    script_sha256: str | None = None
    replay_sha256: str | None = None
    # vLLM's context window when --max-model-len is not given (context_length.py). Not hashed: it only
    # bounds prompt + generation from above, it does not change what the model sees.
    default_max_model_len: int | None = None

    @property
    def seed(self) -> int:
        return self.sampling.seed


def hashed_config(settings: RunSettings) -> dict[str, Any]:
    """The settings that decide the results, as plain JSON values in a fixed order."""
    data = settings.model_dump(mode="json")
    return {name: data[name] for name in HASHED_FIELDS
            if name not in _HASHED_WHEN_SET or data[name] is not None}


def config_hash(config: dict[str, Any]) -> str:
    text = json.dumps(config, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def config_diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per differing setting, nested settings by dotted name: `sampling.seed: 0 -> 3` (sorted)."""
    before, after = _flatten(old), _flatten(new)
    def text(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    return [f"{name}: {text(before.get(name))} -> {text(after.get(name))}"
            for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]


def _flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):  # an empty dict adds no entry: {} -> {"k": 1} reads `k: null -> 1`
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat
