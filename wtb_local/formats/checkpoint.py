"""What a checkpoint on disk says about its size: its files (a local folder or the local hub cache, never a
download), the dtype its weights are stored in, and its parameter count from config.json. `doctor`, `plan`
and `explain` read checkpoints through these, so a reader of finished runs needs no engine module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "int8": 1}


def model_file(model: str, name: str) -> Path | None:
    """A file of a local model directory or of a hub model in the local cache; never downloads."""
    local = Path(model).expanduser()
    if local.is_dir():
        return local / name if (local / name).is_file() else None
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, name)
    except Exception:  # noqa: BLE001 - no hub library or a malformed id: not on disk
        return None
    return Path(found) if isinstance(found, str) else None


def weight_bytes(model: str, config: dict[str, Any]) -> tuple[int | None, str]:
    """Bytes of the weights and where the figure comes from."""
    index = model_file(model, "model.safetensors.index.json")
    if index is not None:
        try:
            total = json.loads(index.read_text(encoding="utf-8"))["metadata"]["total_size"]
            return int(total), "safetensors index"
        except (OSError, ValueError, KeyError, TypeError):
            pass
    single = model_file(model, "model.safetensors")
    if single is not None:
        return single.stat().st_size, "model.safetensors"
    params = estimate_parameters(config)
    if params is None:
        return None, "unknown"
    dtype = stored_dtype(config)
    return params * DTYPE_BYTES.get(dtype, 2), f"estimated from config.json ({params / 1e9:.1f} B parameters)"


def stored_dtype(config: dict[str, Any]) -> str:
    """The dtype the weights are stored in. FP8 checkpoints (DeepSeek-V3, Kimi-K2, GLM-4.5-FP8) say so in
    `quantization_config`; their `torch_dtype` is the activations' dtype."""
    quant = config.get("quantization_config")
    if isinstance(quant, dict) and (str(quant.get("quant_method", "")).lower() == "fp8"
                                    or quant.get("format") == "float-quantized"):
        return "float8_e4m3fn"
    return str(config.get("torch_dtype") or config.get("dtype") or "bfloat16").replace("torch.", "")


def estimate_parameters(config: dict[str, Any]) -> int | None:
    """A decoder's parameter count from its config: attention with grouped KV heads or DeepSeek's latent
    attention, gated MLP or experts (with shared experts, a router, and the first dense layers of
    DeepSeek-V3/GLM-4.5)."""
    config = config.get("text_config") or config
    try:
        hidden = int(config["hidden_size"])
        layers = int(config["num_hidden_layers"])
        vocab = int(config["vocab_size"])
    except (KeyError, TypeError, ValueError):
        return None
    heads = int(config.get("num_attention_heads") or 1)
    head_dim = int(config.get("head_dim") or hidden // heads)
    kv_heads = int(config.get("num_key_value_heads") or heads)
    attention = hidden * head_dim * heads * 2 + hidden * head_dim * kv_heads * 2
    if config.get("kv_lora_rank"):  # latent attention: low-rank query and key/value projections
        nope, rope = int(config.get("qk_nope_head_dim") or 0), int(config.get("qk_rope_head_dim") or 0)
        value, rank, q_rank = int(config.get("v_head_dim") or nope), int(config["kv_lora_rank"]), config.get("q_lora_rank")
        query = hidden * int(q_rank) + int(q_rank) * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
        attention = query + hidden * (rank + rope) + rank * heads * (nope + value) + heads * value * hidden
    dense = 3 * hidden * int(config.get("intermediate_size") or 4 * hidden)
    experts = int(config.get("num_experts") or config.get("n_routed_experts") or config.get("num_local_experts") or 0)
    if experts:
        width = int(config.get("moe_intermediate_size") or config.get("intermediate_size") or 0)
        shared = int(config.get("n_shared_experts") or 0)
        sparse = 3 * hidden * width * (experts + shared) + hidden * experts  # experts and the router
        sparse += 3 * hidden * int(config.get("shared_expert_intermediate_size") or 0)
        first_dense = int(config.get("first_k_dense_replace") or 0)
        mlp = first_dense * dense + (layers - first_dense) * sparse
    else:
        mlp = layers * dense
    embeddings = vocab * hidden * (1 if config.get("tie_word_embeddings") else 2)
    norms = 2 * hidden  # the two RMS norms of a layer (weights only)
    return layers * (attention + norms) + mlp + embeddings + hidden
