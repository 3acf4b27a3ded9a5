"""A resolved run: every value `prepare` decided, with where each came from. Frozen: the loop, the store,
the scorer and the manifest read it, nothing changes it (docs/architecture.md, "prepare")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from wtb_local.contract.spec import engine_settings
from wtb_local.runner.setup.options import engine_fields
from wtb_local.schema import SamplingConfig


class ResolvedRun(BaseModel):
    """The run's values after defaults, the backend, the protocol, the recorded run (replays) and the
    prompt's thinking mode have decided them. `sources[name]` says where a value came from: "default",
    "given (--flag)", "given (WTB_FLAG)", "protocol paper (family qwen)", "recorded run", ..."""

    model_config = ConfigDict(frozen=True, protected_namespaces=())

    model: str | None = None
    model_name: str | None = None
    backend: str
    base_url: str | None = None
    server_prompt: str | None = None  # the openai backend's prompt format; None for the other backends
    api_key: str | None = Field(default=None, exclude=True)  # never written to disk
    request_timeout: float = 600.0  # seconds for one server reply (openai, openai-chat); not hashed
    served_model_name: str | None = None  # the name server backends send in requests (None: `model`)
    parser: str | None = None
    # The version of the parser's implementation when it is not wtb_local's own: `vllm:NAME` records the
    # installed vLLM's version (hashed when set: a vLLM upgrade may read the same completions differently).
    parser_version: str | None = None
    # e.g. {"thinking": "per-step"} when generation prompts may pre-fill <think>; recorded so replays parse alike
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
    shard: str | None = None  # "I/N" (`auto` read from the Slurm array task)
    resume: bool = True
    overwrite: bool = False
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    revision: str | None = None
    trust_remote_code: bool = False
    dtype: str = "auto"  # as asked (hashed); the engine is given `resolved_dtype`
    # --dtype with auto resolved from the checkpoint and the device (runner/setup/dtype.py), for a backend that
    # loads weights; None for the others. Not hashed: numerics only, like the batch (docs/real-model.md).
    resolved_dtype: str | None = None
    quantization: str | None = None
    max_model_len: int | None = None
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int | None = None
    distributed_executor_backend: str | None = None  # vLLM's; "ray" spans nodes (docs/multinode.md §2)
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enable_prefix_caching: bool = True  # vLLM; not hashed: numerics only (docs/reproducibility.md)
    enforce_eager: bool = False
    batch_size: int = 16
    scheduling: str = "auto"
    render_workers: int = 0  # processes rendering prompts beside the loop (rendering/pool.py); not hashed
    # the fast prompt paths' checks (rendering/checks.py); None where the run's prompts do not go through them.
    # Not hashed: prompts are the reference path's either way, so they change no prompt the model sees.
    verify_prompts: str | None = None
    on_prompt_mismatch: str | None = None
    progress: str = "auto"
    engine_log_level: str | None = None  # vLLM's log level (None: error, info with --verbose); not hashed
    verbose: bool = False
    protocol: str | None = None  # the protocol's hash value: None for release (left out of the hash)
    paper_family: str | None = None
    template_sha256: str | None = None
    resolved_revision: str | None = None  # the hub commit the model id resolved to (from the local cache)
    tokenizer_sha256: str | None = None  # of the tokenizer files on disk
    dataset_sha256: str | None = None
    script_sha256: str | None = None
    replay_sha256: str | None = None
    # vLLM's context window when --max-model-len is not given (context_length.py). Not hashed: it only
    # bounds prompt + generation from above, it does not change what the model sees.
    default_max_model_len: int | None = None
    sources: dict[str, str] = Field(default_factory=dict, exclude=True)  # written as the manifest's `sources`

    @property
    def seed(self) -> int:
        return self.sampling.seed

    def engine_settings(self, config: type[BaseModel]) -> dict[str, Any]:
        """The keyword arguments of the engine config `config` (backends/config.py) that the run's options
        decide, as their declarations say (`Cli.engine`, runner/setup/options.py)."""
        declared = engine_fields()
        return engine_settings(declared, {name: getattr(self, name) for name in declared}, config)
