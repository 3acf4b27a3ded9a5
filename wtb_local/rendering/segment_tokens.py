"""Prompt tokenisation by cached pieces: the largest share of the runner's own time per step, cut.

Every step of every task re-sends its session's system prompt (with all tool schemas) and its history;
tokenising the whole prompt again each step cost ~2 ms of the runner's time per step on the sample
(profiled: scripts/bench_throughput.py, `runner_ms_breakdown.render`). Fast tokenizers split added special
tokens (`<|im_start|>`, ...) out of the text before normalising, pre-tokenising and merging the pieces
between them, so a prompt's ids are the concatenation of its pieces' ids: each piece is tokenised once and
looked up after that.

Exactness is checked, not assumed: the first `VERIFY_FIRST` prompts, and every `VERIFY_EVERY`-th after,
are also tokenised whole and compared; on any difference the cache is turned off for good (its prompts
from then on are tokenised whole) and `note` says so. Tokenizers that add a prefix space to the first
piece only (SentencePiece's Metaspace "first") fail that check at the first prompt with text after a
special token, and simply run uncached. Special tokens that strip neighbouring whitespace are never split
at.
"""

from __future__ import annotations

import re
from typing import Any

VERIFY_FIRST = 4
VERIFY_EVERY = 64
MAX_PIECES = 65536  # cached pieces; the cache is emptied when full (the release needs far fewer)


class SegmentEncoder:
    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.enabled = True
        self.note = ""
        self.prompts = 0
        self._cache: dict[str, tuple[int, ...]] = {}
        self._ids: dict[str, int] = {}
        splitters = []
        for token_id, added in sorted(_added_tokens(tokenizer).items()):
            content = getattr(added, "content", None)
            if not content or getattr(added, "lstrip", False) or getattr(added, "rstrip", False):
                continue
            if getattr(added, "special", False):
                splitters.append(content)
                self._ids[content] = int(token_id)
        if splitters:
            # longest first, so a token that contains another is matched whole
            pattern = "|".join(re.escape(t) for t in sorted(splitters, key=lambda t: (-len(t), t)))
            self._split = re.compile(f"({pattern})")
        else:
            self.enabled, self.note = False, "no special tokens to split at"

    def whole(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def encode(self, text: str) -> list[int]:
        if not self.enabled:
            return self.whole(text)
        self.prompts += 1
        ids = self._pieces(text)
        if self.prompts <= VERIFY_FIRST or self.prompts % VERIFY_EVERY == 0:
            reference = self.whole(text)
            if reference != ids:
                self.enabled = False
                self.note = (f"piecewise tokenisation differed from whole-prompt tokenisation at prompt "
                             f"{self.prompts}: cache off, prompts tokenised whole")
                return reference
        return ids

    def _pieces(self, text: str) -> list[int]:
        ids: list[int] = []
        for i, piece in enumerate(self._split.split(text)):
            if not piece:
                continue
            if i % 2:  # a captured special token
                ids.append(self._ids[piece])
                continue
            cached = self._cache.get(piece)
            if cached is None:
                if len(self._cache) >= MAX_PIECES:
                    self._cache.clear()
                cached = self._cache[piece] = tuple(self.whole(piece))
            ids.extend(cached)
        return ids


def _added_tokens(tokenizer: Any) -> dict[int, Any]:
    decoder = getattr(tokenizer, "added_tokens_decoder", None)
    return dict(decoder) if isinstance(decoder, dict) else {}
