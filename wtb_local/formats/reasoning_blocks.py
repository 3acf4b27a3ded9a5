"""The reasoning blocks a generation prompt can open or close, one table for every family.

A prompt that ends with a block's opener makes the completion start inside the reasoning (the run's
thinking mode, the per-step pre-fill); one that ends with an empty block answers without it; and an assistant
turn cut out of a template after such a pre-fill begins by closing it (the probe, the oracle's replies).
Families whose opener is an XML-like `<tag>` need no entry (`<tag>` … `</tag>` is recognised as such);
the table holds the others and the common ones.
"""

from __future__ import annotations

import re

# (opener, closer) by family.
BLOCKS: tuple[tuple[str, str], ...] = (
    ("<think>", "</think>"),                              # Qwen3, GLM, DeepSeek, Hunyuan, Laguna, Hy3, ...
    ("<seed:think>", "</seed:think>"),                    # Seed-OSS
    ("<think:opensource>", "</think:opensource>"),        # Hy3 (its template's spelling)
    ("<mm:think>", "</mm:think>"),                        # MiniMax-M3
    ("<longcat_think>", "</longcat_think>"),              # LongCat
    ("<|START_THINKING|>", "<|END_THINKING|>"),           # Cohere Command
    ("<|open|>think<|sep|>", "<|close|>think<|sep|>"),    # Kimi-K3
    ("<|channel>thought", "<channel|>"),                  # Gemma 4 (a pair of tokens around the thought channel)
    ("<|plamo:begin_think:plamo|>", "<|plamo:end_think:plamo|>"),  # PLaMo 3
    ("<ifm|think_faster>", "</ifm|think_faster>"),        # K2 Horizon, reasoning_effort low
    ("<ifm|think_fast>", "</ifm|think_fast>"),            # K2 Horizon, medium
    ("<ifm|think>", "</ifm|think>"),                      # K2 Horizon, high
    ("<|content_thinking|>", "<|end_message|>"),          # Inkling
)  # fmt: skip

_TAG = re.compile(r"<(?P<tag>[A-Za-z][\w:-]*)>")


def closer_of(opener: str) -> str | None:
    """The closer of a block opener (`<tag>` -> `</tag>`); None when `opener` opens no block."""
    opener = opener.strip()
    for known, closer in BLOCKS:
        if opener == known:
            return closer
    tag = _TAG.fullmatch(opener)
    return f"</{tag.group('tag')}>" if tag else None


def open_at_end(prompt: str) -> str | None:
    """The block opener a prompt ends with (the completion starts inside that reasoning), else None."""
    tail = prompt.rstrip()
    return next((opener for opener, _ in BLOCKS if tail.endswith(opener)), None)


def empty_at_end(prompt: str) -> tuple[str, str] | None:
    """The block a prompt closes empty at its end (`<think>\\n\\n</think>`: thinking off), else None."""
    tail = prompt.rstrip()
    for opener, closer in BLOCKS:
        if tail.endswith(closer) and tail[: -len(closer)].rstrip().endswith(opener):
            return opener, closer
    return None


def is_closed_block(text: str) -> bool:
    """Whether `text` is one whole block, opener … closer (a pre-filled block the model writes after)."""
    stripped = text.strip()
    for opener, closer in BLOCKS:
        if stripped.startswith(opener) and stripped.endswith(closer) and len(stripped) >= len(opener + closer):
            return True
    tag = _TAG.match(stripped)
    return tag is not None and stripped.endswith(f"</{tag.group('tag')}>")


def ends_in_open_reasoning(prompt: str) -> bool:
    """Whether a generation prompt ends inside an opened reasoning block: the completion starts as
    reasoning, so one cut at the token limit before `</think>` is not a final text answer."""
    return open_at_end(prompt) is not None
