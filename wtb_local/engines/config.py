"""Typed engine settings. Field names mirror vLLM's engine arguments so a user's vLLM knowledge carries
over (and `VLLMConfig.engine_args()` passes them through unchanged)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class VLLMConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str
    tokenizer: str | None = None
    revision: str | None = None
    dtype: str = "auto"
    tensor_parallel_size: int = Field(1, ge=1)
    pipeline_parallel_size: int = Field(1, ge=1)
    # None: not passed (vLLM releases before data parallelism reject the name); N: N engine replicas in one
    # process group, requests balanced by vLLM itself.
    data_parallel_size: int | None = Field(None, ge=1)
    # None: not passed (vLLM picks: mp on one node). "ray": workers on the nodes of a running Ray cluster,
    # the only way one engine spans several nodes (docs/multinode.md §2).
    distributed_executor_backend: Literal["mp", "ray", "uni", "external_launcher"] | None = None
    max_model_len: int | None = Field(None, ge=1)
    # None: the installed vLLM's default on a GPU (0.92; 1.0 on CUDA/ROCm from vLLM 0.34: vllm_release.py);
    # 0.2 on vLLM's CPU build, where it is the share of host RAM reserved.
    gpu_memory_utilization: float | None = Field(None, gt=0.0, le=1.0)
    quantization: str | None = None
    trust_remote_code: bool = False
    max_num_seqs: int | None = Field(None, ge=1)
    enforce_eager: bool = False
    seed: int = 0
    enable_prefix_caching: bool = True
    download_dir: str | None = None
    # None: vLLM's defaults on a GPU. On the CPU build chunked prefill is turned off (and the batch token
    # budget raised to the context window): its sampler crashes the engine ("CPU Generator does not use
    # offset") when a request with its own seed is prefilled in chunks.
    enable_chunked_prefill: bool | None = None
    max_num_batched_tokens: int | None = Field(None, ge=1)
    # "dummy": random weights of the model's shape, nothing read from disk (benchmarks without a download)
    load_format: str | None = None

    def engine_args(self) -> dict[str, Any]:
        """Keyword arguments for vLLM's `AsyncEngineArgs`; unset optional fields keep vLLM's defaults."""
        args = self.model_dump()
        return {k: v for k, v in args.items() if v is not None}


class TransformersConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str
    revision: str | None = None
    dtype: str = "auto"
    trust_remote_code: bool = False
    device_map: str | None = "auto"
    batch_size: int = Field(16, ge=1)
    max_model_len: int | None = Field(None, ge=1)  # None: the model config's max_position_embeddings


class OpenAIConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    base_url: str  # e.g. http://127.0.0.1:8000/v1 ; "/completions" is appended
    model: str  # the checkpoint or tokenizer (its generation_config is read from it)
    served_model_name: str | None = None  # the name sent in requests (vLLM's --served-model-name); None: model
    api_key: str | None = None
    max_concurrency: int = Field(64, ge=1)
    timeout_s: float = Field(600, gt=0)
    # Known context window: over-long prompts fail locally. None: the server's, from its model listing
    # (vLLM lists `max_model_len`), else unknown.
    max_model_len: int | None = Field(None, ge=1)
    max_retries: int = Field(4, ge=0)
    retry_backoff_s: float = Field(1.0, ge=0)
    # token-ids: the renderer's token ids are the prompt (what the in-process engines get); text: the
    # rendered text with add_special_tokens false, for servers that take only text.
    prompt_format: Literal["token-ids", "text"] = "token-ids"
    revision: str | None = None  # of `model` on the hub, where its generation_config.json is read
    # The checkpoint's generation_config (None: read from `model` at start); sampling resolves from it.
    generation_config: dict[str, Any] | None = None

    @property
    def request_model(self) -> str:
        """The `model` of every request: the server's name for the model."""
        return self.served_model_name or self.model
