"""Prompt tokenisation by cached pieces: the largest share of the runner's own time per step, cut.

Every step of every task re-sends its session's system prompt (with all tool schemas) and its history;
tokenising the whole prompt again each step cost ~2 ms of the runner's time per step on the sample
(profiled: scripts/bench_throughput.py, `runner_ms_breakdown.render`). Fast tokenizers split added special
tokens (`<|im_start|>`, ...) out of the text before normalising, pre-tokenising and merging the pieces
between them, so a prompt's ids are the concatenation of its pieces' ids: each piece is tokenised once and
looked up after that.

Exactness is checked, not assumed: the prompts `checks.policy` names (the first 4 and every N-th,
`--verify-prompts`; checks.py) are also tokenised whole and compared; on any difference the whole
prompt's ids are returned, the mismatch goes to `checks`, and the cache is turned off for good (its
prompts from then on are tokenised whole). Tokenizers that add a prefix space to the first piece only
(SentencePiece's Metaspace "first") are not piecewise at all: a probe at start finds that and they run
uncached from the first prompt, said in `note` (not a mismatch: nothing was taken on trust). Special
tokens that strip neighbouring whitespace are never split at.

The next prompt of a conversation begins with most of the previous one, so `encode(text, key=...)` also
remembers, per conversation key, the ids at every special token of the last prompt: the longest of those
prefixes that the new prompt shares is taken as it is and only the rest is split and looked up
(docs/runner-speed.md §2). A prefix that ends right after a special token splits exactly as it did, so
the ids are the same; that needs no special token to contain another (checked; otherwise prefixes are
not reused), and the sampled whole-prompt check above covers these prompts too.
"""

from __future__ import annotations

import re
from typing import Any

from wtb_local.formats.rendering.checks import PromptChecks

MAX_PIECES = 65536  # cached pieces; the cache is emptied when full (the release needs far fewer)
MAX_CONVERSATIONS = 8192  # remembered last prompts; emptied when full (a run has one per task in flight)


class SegmentEncoder:
    def __init__(self, tokenizer: Any, checks: PromptChecks | None = None) -> None:
        self.tokenizer = tokenizer
        self.checks = checks if checks is not None else PromptChecks()
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
        # key -> (text, ids, [(end of a special token in text, ids before that end)]) of its last prompt
        self._last: dict[Any, tuple[str, list[int], list[tuple[int, int]]]] = {}
        self.reused_chars = 0  # prompt characters taken from a conversation's previous prompt
        self.reuse = not any(a != b and a in b for a in splitters for b in splitters)
        if splitters:
            # longest first, so a token that contains another is matched whole
            pattern = "|".join(re.escape(t) for t in sorted(splitters, key=lambda t: (-len(t), t)))
            self._split = re.compile(f"({pattern})")
        else:
            self.enabled, self.note = False, "no special tokens to split at"
        if self.enabled and not self._piecewise(splitters[0]):
            self.enabled, self.note = False, ("the tokenizer does not tokenise the text between special tokens "
                                              "on its own (e.g. a prefix space on the first piece only): "
                                              "prompts tokenised whole")

    def whole(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _piece(self, text: str) -> list[int]:
        """One piece's ids: straight from the fast tokenizer's Rust backend where there is one (what
        `whole` calls underneath, without transformers' per-call wrapping); the sampled whole-prompt
        check covers this path as well."""
        backend = getattr(self.tokenizer, "_tokenizer", None)
        if backend is None or not hasattr(backend, "encode"):
            return self.whole(text)
        return backend.encode(text, add_special_tokens=False).ids

    def encode(self, text: str, key: Any = None, family: Any = None) -> list[int]:
        """The prompt's ids. `key` names its conversation (the previous prompt under that key is reused);
        `family` a group of conversations sharing a beginning (a session's tasks), whose latest prompt is
        reused by a conversation's first prompt."""
        if not self.enabled:
            self.checks.reference("tokenisation")
            return self.whole(text)
        self.prompts += 1
        ids = self._fast_ids(text, key, family)
        if self.checks.fast("tokenisation"):
            reference = self.whole(text)
            if reference != ids:
                self.checks.mismatch("tokenisation", ids, reference)
                self.off(f"piecewise tokenisation differed from whole-prompt tokenisation at prompt "
                         f"{self.prompts}: cache off, prompts tokenised whole")
                return reference
        return ids

    def off(self, note: str) -> None:
        """Tokenise whole prompts alone from now on."""
        self.enabled = False
        self.note = self.note or note

    def _fast_ids(self, text: str, key: Any, family: Any) -> list[int]:
        """The prompt's ids by cached pieces (and the conversation's previous prompt, given its key)."""
        return self._continue(text, key, family) if key is not None and self.reuse else self._pieces(text)

    def _piecewise(self, special: str) -> bool:
        """Whether text around a special token tokenises as its pieces do alone (a probe at start)."""
        for text in (f"a{special}a b", f" x {special} x\n{special}\n"):
            if self._pieces(text) != self.whole(text):
                return False
        return True

    def forget(self, key: Any) -> None:
        self._last.pop(key, None)

    def _continue(self, text: str, key: Any, family: Any = None) -> list[int]:
        """`_pieces(text)`, reusing the ids of the longest prefix shared with `key`'s previous prompt (else
        `family`'s latest) that ends right after a special token."""
        ids: list[int] = []
        bounds: list[tuple[int, int]] = []
        start = 0
        last = self._last.get(key)
        if last is None and family is not None:
            last = self._last.get(("family", family))
        if last is not None:
            previous, previous_ids, previous_bounds = last
            shared = _shared_prefix(previous, text)
            for k in range(len(previous_bounds) - 1, -1, -1):
                end, count = previous_bounds[k]
                if end <= shared:
                    ids, bounds, start = previous_ids[:count], previous_bounds[:k + 1], end
                    self.reused_chars += end
                    break
        ids = self._pieces(text, start, ids, bounds)
        if len(self._last) >= MAX_CONVERSATIONS:
            self._last.clear()
        self._last[key] = (text, ids, bounds)
        if family is not None:
            self._last[("family", family)] = self._last[key]
        return list(ids)  # the caller's own list: the remembered one must not change

    def _pieces(self, text: str, start: int = 0, ids: list[int] | None = None,
                bounds: list[tuple[int, int]] | None = None) -> list[int]:
        """The ids of `text[start:]` after `ids`; each special token's end (and ids so far) into `bounds`."""
        ids = ids if ids is not None else []
        position = start
        for i, piece in enumerate(self._split.split(text[start:] if start else text)):
            if not piece:
                continue
            position += len(piece)
            if i % 2:  # a captured special token
                ids.append(self._ids[piece])
                if bounds is not None:
                    bounds.append((position, len(ids)))
                continue
            cached = self._cache.get(piece)
            if cached is None:
                if len(self._cache) >= MAX_PIECES:
                    self._cache.clear()
                cached = self._cache[piece] = tuple(self._piece(piece))
            ids.extend(cached)
        return ids


def _shared_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of `a` and `b` (a binary search of C-speed comparisons)."""
    low, high = 0, min(len(a), len(b))
    while low < high:  # a[:low] == b[:low]; the first difference lies at or before `high`
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _added_tokens(tokenizer: Any) -> dict[int, Any]:
    decoder = getattr(tokenizer, "added_tokens_decoder", None)
    return dict(decoder) if isinstance(decoder, dict) else {}
