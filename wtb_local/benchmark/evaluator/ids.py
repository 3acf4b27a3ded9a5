"""Deterministic tool-call ids (docs/evaluation.md §3: the reference's are random; ids never affect scoring).

Stable ids keep prompts byte-identical across steps and reruns, so prefix caching hits.
"""

from __future__ import annotations

import hashlib
import re

CALL_ID_STYLES = ("openai", "mistral", "index")

_ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_TRAILING_INT = re.compile(r"(\d+)$")


def make_call_id(key: str, style: str = "openai") -> str:
    """A call id derived from `key` with sha256.

    - `"openai"`: `"call_"` + 24 hex characters.
    - `"mistral"`: exactly 9 characters from [a-zA-Z0-9] (Mistral templates reject anything else).
    - `"index"`: the key's trailing integer (templates that number calls build their own id around it).
    """
    if style == "index":
        match = _TRAILING_INT.search(key)
        if match is None:
            raise ValueError(f"call id style 'index' needs a key ending in an integer, got {key!r}")
        return str(int(match.group(1)))
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    if style == "openai":
        return "call_" + digest.hex()[:24]
    if style == "mistral":
        number = int.from_bytes(digest, "big")
        chars = []
        for _ in range(9):
            number, rest = divmod(number, len(_ALPHANUMERIC))
            chars.append(_ALPHANUMERIC[rest])
        return "".join(chars)
    raise ValueError(f"unknown call id style {style!r}; choose one of {', '.join(CALL_ID_STYLES)}")
