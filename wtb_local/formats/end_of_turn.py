"""The one table of end-of-turn tokens, and the one function that strips them off a completion's end.

Engines usually drop the token that stopped generation, but not always (a stop token kept with
`skip_special_tokens=False`, a server that echoes it, a second end marker): parsers strip whatever is left
before reading calls, the renderer strips it off the assistant turn it cuts out of a template (the oracle's
replies), and backends strip the model's own stop token with the same function. Markers only ever come off
the end of the text, so a token quoted inside a reply is never touched.
"""

from __future__ import annotations

from collections.abc import Iterable

# By family (docs/parsers-and-templates.md, "End-of-turn tokens").
END_OF_TURN: tuple[str, ...] = (
    "<|im_end|>", "<|endoftext|>",                          # Qwen, Hermes, Hunyuan, Kimi-K2
    "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|eot|>",  # Llama 3.x, Llama 4, Granite
    "<｜end▁of▁sentence｜>",                                # DeepSeek
    "<|end|>", "<|return|>", "<|call|>",                      # gpt-oss (harmony), Phi-4-mini
    "</s>",                                                   # Mistral
    "<end_of_turn>",                                          # Gemma
    "<|im_end_of_turn|>", "<|eos|>",                          # Hunyuan variants
    "<|observation|>", "<|user|>",                            # GLM-4.5+ (the next turn's header stops it)
    "<seed:eos>",                                             # Seed-OSS
    "[e~[",                                                   # MiniMax-M2, MiniMax-M3
    "<turn|>", "<|tool_response>",                            # Gemma 4 (a call turn stops at the response)
    "<|assistant_end|>",                                      # Apertus
    "<|end_of_msg|>", "<|close|>message<|sep|>",              # Kimi-K3 (the message's close tag, then its end)
    "<|END_OF_TURN_TOKEN|>",                                  # Cohere Command
    "<|message_sep|>",                                        # GigaChat3
    "<｜hy_eos:opensource｜>", "<｜hy_eos｜>",                  # Hy3
    "</assistant>", "〈|EOS|〉",                               # Poolside Laguna
    # second-half 2026 families (docs/parsers-and-templates.md, "Second-half 2026 families")
    "<|plamo:tag|>",                                          # PLaMo 3
    "<|iquest_end|>",                                         # IQuest-Q1
    "<|content_model_end_sampling|>", "<|end_message|>",     # Inkling (the turn's end, then a block's)
)  # fmt: skip


def strip_end_of_turn(text: str, markers: Iterable[str] = END_OF_TURN, *, once: bool = False) -> str:
    """`text` without the end-of-turn markers at its end (whitespace between them goes too; longest
    marker first). `once`: exactly one marker, only when the text ends with it (a backend removing the
    stop token it knows was generated, whitespace kept)."""
    ordered = sorted({m for m in markers if m}, key=len, reverse=True)
    if once:
        return next((text[: -len(m)] for m in ordered if text.endswith(m)), text)
    changed = True
    while changed:
        changed = False
        stripped = text.rstrip()
        for marker in ordered:
            if stripped.endswith(marker):
                text, changed = stripped[: -len(marker)], True
                break
    return text
