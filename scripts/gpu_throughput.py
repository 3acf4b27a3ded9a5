"""Throughput of the transformers backend (the paper's engine) at batch sizes 1, 8 and 32.

Prepared for a GPU session: a dummy-weight model of Qwen3-8B's shape (random init on the GPU in bf16, no
download) is driven through `TransformersBackend` on the first-step prompts of the sample dataset's
tasks (gold history included), rendered with a Qwen2.5-style template by a tokenizer trained on those
prompts (`build_tiny_model(corpus=...)`), so prompt lengths in tokens are close to a real BPE's. Random
weights rarely emit EOS, so nearly every reply runs to max_new_tokens: generated tokens/s is the figure
to compare; tasks/s is a lower bound (real replies stop earlier).

    python scripts/gpu_throughput.py                 # GPU: Qwen3-8B shape, bf16, max_new_tokens 512
    python scripts/gpu_throughput.py --tiny          # CPU smoke run: tiny shape, max_new_tokens 32

Writes the figures as JSON to $OUT/gpu_throughput.json when OUT is set (and to --out-json if given).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from wtb_local.backends.config import TransformersConfig
from wtb_local.backends.hf_generate import TransformersBackend
from wtb_local.schema import Completion, GenerationRequest, SamplingConfig

# Qwen3-8B's published shape.
QWEN3_8B: dict[str, Any] = {
    "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936, "max_position_embeddings": 40960,
    "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
}
# Qwen3's published sampling defaults (the paper's protocol: the checkpoint's generation_config).
QWEN3_GENERATION = {"do_sample": True, "temperature": 0.6, "top_p": 0.95, "top_k": 20}

# A Qwen2.5-style (Hermes) template: tools in the system turn, <tool_call> JSON blocks, tool results in
# <tool_response> blocks of a user turn. Written here so the script needs no download.
TEMPLATE = r"""
{%- if tools %}<|im_start|>system
{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}{% else %}You are a helpful assistant.{% endif %}

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif messages[0]['role'] == 'system' %}<|im_start|>system
{{ messages[0]['content'] }}<|im_end|>
{% endif %}
{%- for m in messages %}
{%- if m['role'] == 'user' or (m['role'] == 'assistant' and not m.get('tool_calls')) %}<|im_start|>{{ m['role'] }}
{{ m['content'] }}<|im_end|>
{% elif m['role'] == 'assistant' %}<|im_start|>assistant
{% if m['content'] %}{{ m['content'] }}
{% endif %}
{%- for call in m['tool_calls'] %}<tool_call>
{"name": "{{ call['function']['name'] }}", "arguments": {% if call['function']['arguments'] is string %}{{ call['function']['arguments'] }}{% else %}{{ call['function']['arguments'] | tojson }}{% endif %}}
</tool_call>{% if not loop.last %}
{% endif %}{% endfor %}<|im_end|>
{% elif m['role'] == 'tool' %}{% if loop.first or messages[loop.index0 - 1]['role'] != 'tool' %}<|im_start|>user{% endif %}
<tool_response>
{{ m['content'] }}
</tool_response>{% if loop.last or messages[loop.index0 + 1]['role'] != 'tool' %}<|im_end|>
{% endif %}{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


Conversation = tuple[str, list[dict[str, Any]], list[dict[str, Any]]]


def first_step_conversations(dataset: Path) -> list[Conversation]:
    """(request id, messages, tools) at step 0 of every task, in dataset order."""
    from wtb_local.dataset.loader import read_dataset
    from wtb_local.evaluator.episode import session_episodes

    sessions, problems = read_dataset(dataset)
    if problems:
        raise SystemExit(f"{dataset}: {problems[0]}")
    out = []
    for session in sessions:
        for episode in session_episodes(session):
            messages, tools = episode.request()
            out.append((f"{session.id}/{episode.task_idx}/0", messages, tools))
    return out


def build_tokenizer_dir(work: Path, conversations: list[Conversation]) -> tuple[Path, list[tuple[str, str]]]:
    """Render every prompt with the template, then train the tokenizer on those texts."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from wtb_local.testing import build_tiny_model

    env = ImmutableSandboxedEnvironment()
    env.filters["tojson"] = lambda value: json.dumps(value, ensure_ascii=False)  # as transformers renders
    template = env.from_string(TEMPLATE.lstrip("\n"))
    prompts = [(rid, template.render(messages=m, tools=t, add_generation_prompt=True))
               for rid, m, t in conversations]
    path = build_tiny_model(work / "model", TEMPLATE.lstrip("\n"),
                            special_tokens=["<tool_call>", "</tool_call>"], arch="qwen3", vocab_size=8192,
                            max_position_embeddings=32768,
                            generation_config=QWEN3_GENERATION, corpus=[p for _, p in prompts])
    return path, prompts


def load_backend(model_dir: Path, tiny: bool, batch_size: int) -> TransformersBackend:
    config = TransformersConfig(model=str(model_dir), batch_size=batch_size,
                                device_map=None if tiny else "auto", max_model_len=32768)
    if tiny:
        backend = TransformersBackend(config)
        asyncio.run(backend.start())
        return backend
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, Qwen3Config

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    shape = Qwen3Config(**QWEN3_8B, eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(shape, dtype=torch.bfloat16)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id, **QWEN3_GENERATION)
    return TransformersBackend.from_loaded(model, tokenizer, config)


def measure(backend: TransformersBackend, prompts: list[tuple[str, str]], batch_size: int, n: int,
            max_new_tokens: int) -> dict[str, Any]:
    backend.config.batch_size = batch_size
    chosen = [prompts[i % len(prompts)] for i in range(n)]
    requests = [
        GenerationRequest(request_id=f"{rid}#{i}", session_id=rid.split("/")[0], task_idx=0, step=0,
                          prompt=text, sampling=SamplingConfig(max_new_tokens=max_new_tokens), seed=i)
        for i, (rid, text) in enumerate(chosen)
    ]

    async def run() -> list[Completion]:
        return list(await asyncio.gather(*(backend.generate(r) for r in requests)))

    _sync()
    started = time.perf_counter()
    out = asyncio.run(run())
    _sync()
    wall = time.perf_counter() - started
    errors = sorted({c.error for c in out if c.error})
    generated = sum(c.completion_tokens for c in out)
    return {
        "batch_size": batch_size,
        "requests": n,
        "wall_s": round(wall, 3),
        "tasks_per_s": round(n / wall, 4),
        "generated_tokens": generated,
        "generated_tokens_per_s": round(generated / wall, 2),
        "prompt_tokens_mean": round(sum(c.prompt_tokens for c in out) / n, 1),
        "finish_reasons": {r: sum(c.finish_reason == r for c in out) for r in ("stop", "length", "error")},
        "errors": errors[:3],
    }


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny model shape on CPU (smoke run)")
    parser.add_argument("--dataset", type=Path, default=ROOT / "data" / "sample.jsonl")
    parser.add_argument("--batch-sizes", default="1,8,32")
    parser.add_argument("--waves", type=int, default=1, help="full waves per batch size")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="default 512 (GPU) / 32 (--tiny)")
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args()
    max_new = args.max_new_tokens or (32 if args.tiny else 512)
    if not args.tiny:
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device: run with --tiny for a CPU smoke run")

    conversations = first_step_conversations(args.dataset)
    with tempfile.TemporaryDirectory(prefix="wtb_throughput_") as tmp:
        t0 = time.perf_counter()
        model_dir, prompts = build_tokenizer_dir(Path(tmp), conversations)
        backend = load_backend(model_dir, args.tiny, batch_size=1)
        setup_s = time.perf_counter() - t0
        measure(backend, prompts, 1, 1, 8)  # warm-up: kernels, allocator
        runs = [measure(backend, prompts, b, b * args.waves, max_new)
                for b in (int(x) for x in args.batch_sizes.split(","))]
        info = backend.describe()
    figures = {
        "script": "gpu_throughput",
        "shape": "tiny" if args.tiny else "Qwen3-8B (random weights, bf16)",
        "max_new_tokens": max_new,
        "dataset": str(args.dataset),
        "distinct_prompts": len(prompts),
        "setup_s": round(setup_s, 2),
        "backend": {k: info.get(k) for k in ("device", "device_name", "dtype", "transformers_version",
                                              "torch_version", "generation_defaults")},
        "host": platform.node(),
        "runs": runs,
    }
    text = json.dumps(figures, indent=1, sort_keys=True)
    print(text)
    targets = [args.out_json] if args.out_json else []
    if os.environ.get("OUT"):
        targets.append(Path(os.environ["OUT"]) / "gpu_throughput.json")
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n")


if __name__ == "__main__":
    main()
