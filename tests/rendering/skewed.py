"""Test doubles of the fast prompt paths that differ from the reference path on one chosen prompt.

`SkewedRenderer` is a real `PromptRenderer` whose fast rendering (FastTemplate) changes one character, and
whose piecewise tokenisation (SegmentEncoder) one token id, of the prompt whose correct text has the given
sha256; every other prompt goes through the real fast paths untouched. It pickles like its parent, so
render workers (which import this module from the checkout) build the same doubles.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from wtb_local.formats.rendering.renderer import FastTemplate, PromptRenderer
from wtb_local.formats.rendering.segment_tokens import SegmentEncoder

CHARACTER = 7  # the character the skewed rendering changes
TOKEN = 5  # the token id the skewed tokenisation changes


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SkewedTemplate(FastTemplate):
    def __init__(self, *args: Any, target: str | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.target = target

    def _render_fast(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                     add_generation_prompt: bool) -> str | None:
        text = super()._render_fast(messages, tools, add_generation_prompt=add_generation_prompt)
        if text is None or text_sha256(text) != self.target:
            return text
        return text[:CHARACTER] + ("#" if text[CHARACTER] != "#" else "%") + text[CHARACTER + 1:]


class SkewedEncoder(SegmentEncoder):
    def __init__(self, *args: Any, target: str | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.target = target

    def _fast_ids(self, text: str, key: Any, family: Any) -> list[int]:
        ids = super()._fast_ids(text, key, family)
        if text_sha256(text) != self.target:
            return ids
        return [*ids[:TOKEN], ids[TOKEN] + 1, *ids[TOKEN + 1:]]


class SkewedRenderer(PromptRenderer):
    """`skew_rendering` / `skew_tokenisation`: the sha256 of the one prompt text each fast path gets wrong."""

    def __init__(self, *args: Any, skew_rendering: str | None = None, skew_tokenisation: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.skew_rendering = skew_rendering
        self.skew_tokenisation = skew_tokenisation

    @property
    def fast_template(self) -> Any:  # type: ignore[override]
        return functools.partial(SkewedTemplate, target=self.skew_rendering)

    @property
    def segment_encoder(self) -> Any:  # type: ignore[override]
        return functools.partial(SkewedEncoder, target=self.skew_tokenisation)
