"""Offline memory estimate of a roster entry (docs/roster.md §3): weights (parameters x bytes per
parameter) plus the KV cache, against the GPU memory vLLM may use (`gpu_memory_utilization` of every
GPU of the resource class). Shapes come from the model's `config.json` when it is in the local Hugging
Face cache (HF_HOME; nothing is downloaded), else from the roster entry. Activations and CUDA graphs are
not modelled: vLLM measures them at start-up and gives the KV cache what is left."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wtb_local.contract.jsonl import read_json_object
from wtb_local.formats.checkpoint import model_file

GIB = 1024 ** 3
KV_BYTES = 2  # vLLM's default KV cache dtype follows the activations (bf16), also for FP8 weights


def cached_config(model: str) -> dict[str, Any] | None:
    """The model's config.json from a local directory or the local hub cache (checkpoint.model_file)."""

    path = model_file(model, "config.json")
    if path is None:
        return None
    return read_json_object(path)


def _text(config: dict[str, Any]) -> dict[str, Any]:
    inner = config.get("text_config")
    return inner if isinstance(inner, dict) else config


def shape_from_config(config: dict[str, Any]) -> dict[str, int]:
    """The roster's `config` keys read from a Hugging Face config.json."""
    c = _text(config)
    heads = c.get("num_attention_heads")
    shape = {"layers": c.get("num_hidden_layers"), "attention_heads": heads,
             "kv_heads": c.get("num_key_value_heads") or heads,
             "head_dim": c.get("head_dim") or (c["hidden_size"] // heads if heads and c.get("hidden_size") else None),
             "kv_lora_rank": c.get("kv_lora_rank"), "qk_rope_head_dim": c.get("qk_rope_head_dim"),
             "max_position_embeddings": c.get("max_position_embeddings")}
    return {k: int(v) for k, v in shape.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}


def kv_bytes_per_token(shape: dict[str, int], tensor_parallel: int) -> int | None:
    """KV cache bytes one token takes over all GPUs. Latent attention keeps one latent vector per layer,
    replicated on every tensor-parallel rank; grouped-query attention keeps K and V per KV head, and a
    head is replicated when there are more ranks than KV heads."""
    layers = shape.get("layers")
    if not layers:
        return None
    if shape.get("kv_lora_rank"):
        return layers * (shape["kv_lora_rank"] + shape.get("qk_rope_head_dim", 0)) * KV_BYTES * tensor_parallel
    if not shape.get("kv_heads") or not shape.get("head_dim"):
        return None
    heads = max(shape["kv_heads"], tensor_parallel)
    return layers * 2 * heads * shape["head_dim"] * KV_BYTES


@dataclass(frozen=True)
class Estimate:
    weights_gib: float
    kv_one_gib: float | None  # one sequence of the full context
    kv_batch_gib: float | None  # the planned batch
    usable_gib: float

    def line(self) -> str:
        kv = f"{self.kv_batch_gib:.1f}" if self.kv_batch_gib is not None else "?"
        return f"{self.weights_gib:.1f} + {kv} / {self.usable_gib:.1f}"


def estimate(weight_bytes: float, kv_per_token: int | None, context: int | None, batch_tokens: int,
             usable_gib: float) -> Estimate:
    weights = weight_bytes / GIB
    one = kv_per_token * context / GIB if kv_per_token and context else None
    batch = kv_per_token * batch_tokens / GIB if kv_per_token else None
    return Estimate(weights, one, batch, usable_gib)
