"""Shared constants and request builders for the backend tests."""

from __future__ import annotations

from wtb_local.contract.schema import GenerationRequest, SamplingConfig

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# p(<tool_call>) ≈ 0.36, p(EOS) ≈ 0.05 per token, the rest spread over ~640 tokens: in 16 tokens about
# half the replies stop and half hit the limit, and nearly all contain the marker.
MIXED_LOGITS = {"<tool_call>": 6.0, "<|im_end|>": 4.0}
MIXED_GENERATION = {"do_sample": True, "temperature": 1.0, "top_p": 1.0, "top_k": 0, "repetition_penalty": 1.0}


def chat_prompt(text: str) -> str:
    return f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"


def make_request(i: int, *, prompt: str | None = None, max_new_tokens: int = 16, seed: int | None = None,
                 run_seed: int = 0, temperature: float | None = None,
                 prompt_token_ids: list[int] | None = None) -> GenerationRequest:
    return GenerationRequest(
        request_id=f"wild_tool_bench_{i:03d}/0/0",
        session_id=f"wild_tool_bench_{i:03d}",
        task_idx=0,
        step=0,
        prompt=chat_prompt(f"question number {i}: what is the weather?") if prompt is None else prompt,
        prompt_token_ids=prompt_token_ids,
        sampling=SamplingConfig(max_new_tokens=max_new_tokens, seed=run_seed, temperature=temperature),
        seed=i if seed is None else seed,
    )
