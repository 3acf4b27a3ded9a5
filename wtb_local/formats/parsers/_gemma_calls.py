"""Reading Gemma-style calls, `call:NAME{key:value,...}`, shared by Gemma 4 and FunctionGemma.

The argument object is not JSON: keys are bare (`city:`), strings sit between a delimiter token
(`<|"|>` in Gemma 4, `<escape>` in FunctionGemma) and are taken verbatim up to the next one, numbers,
booleans and null are bare words, objects and arrays nest with `{...}` / `[...]`. Read leniently, as the
models write it: a key may also be delimited or JSON-quoted, a string JSON-quoted, `None`/`True` are
Python spellings, a trailing-dot number (`1.`) is a float, a bare word that is no literal is a string, and
pairs without a comma between them (FunctionGemma) still read. `key=value` pairs and a parenthesised
argument list (`call:NAME(...)`) read too, and are reported (`CallRead.errors`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from wtb_local.contract.messages import JSONObject

_NAME = re.compile(r"[A-Za-z_][\w.\-]*")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None, "none": None}
_BARE_KEY = re.compile(r"[^:=,{}\[\]()\s]+")
_WS = " \t\r\n"


class Unreadable(ValueError):
    """The argument text is not an object of this syntax; `cut` is True when the text ended inside it."""

    def __init__(self, reason: str, *, cut: bool = False) -> None:
        super().__init__(reason)
        self.cut = cut


@dataclass
class CallRead:
    """One call read at a position: its name, arguments, where it ended, and what was off about it."""

    name: str
    arguments: JSONObject
    end: int
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class GemmaArgs:
    """The argument syntax of one family: the string delimiter token(s) it writes."""

    delimiters: tuple[str, ...]

    def read_call(self, text: str, i: int) -> CallRead:
        """The call whose name starts at `text[i]` (after `call:`): NAME, then `{...}` (or `(...)`).
        Raises Unreadable."""
        found = _NAME.match(text, i)
        if found is None:
            raise Unreadable("no function name after call:")
        name = found.group(0)
        j = _skip(text, found.end())
        if j >= len(text):
            raise Unreadable(f"call {name}: no arguments", cut=True)
        read = _Reader(text, self.delimiters)
        if text[j] == "{":
            arguments, end = read.mapping(j, "}")
        elif text[j] == "(":
            arguments, end = read.mapping(j, ")")
            read.errors.append(f"call {name}: arguments in parentheses instead of braces")
        else:
            raise Unreadable(f"call {name}: no {{ after the name")
        return CallRead(name, arguments, end, read.errors)

    def write_value(self, value: Any, *, top: bool = False) -> str:
        """How the family writes a value (bare keys, delimited strings, bare literals)."""
        delim = self.delimiters[0]
        if isinstance(value, str):
            return f"{delim}{value}{delim}"
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is None:
            return "null"
        if isinstance(value, (int, float)):
            return json.dumps(value)
        if isinstance(value, dict):
            pairs = ",".join(f"{_key(k, delim)}:{self.write_value(v)}" for k, v in value.items())
            return f"{{{pairs}}}"
        if isinstance(value, list):
            return "[" + ",".join(self.write_value(v) for v in value) + "]"
        return f"{delim}{value}{delim}"


def _key(key: str, delim: str) -> str:
    return key if re.fullmatch(r"[A-Za-z_][\w.\-]*", key) else f"{delim}{key}{delim}"


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


class _Reader:
    def __init__(self, text: str, delimiters: tuple[str, ...]) -> None:
        self.text = text
        self.delimiters = delimiters
        self.errors: list[str] = []

    def _delimiter_at(self, i: int) -> str | None:
        return next((d for d in self.delimiters if self.text.startswith(d, i)), None)

    def _delimited(self, i: int, delim: str) -> tuple[str, int]:
        start = i + len(delim)
        end = self.text.find(delim, start)
        if end < 0:
            raise Unreadable("a string is never closed", cut=True)
        return self.text[start:end], end + len(delim)

    def _json_string(self, i: int) -> tuple[str, int]:
        try:
            value, end = json.JSONDecoder().raw_decode(self.text, i)
        except ValueError:
            raise Unreadable("a quoted string is not valid", cut='"' not in self.text[i + 1:]) from None
        return value, end

    def mapping(self, i: int, close: str) -> tuple[JSONObject, int]:
        """The object opened at `text[i]`, up to `close`."""
        out: JSONObject = {}
        j = _skip(self.text, i + 1)
        while True:
            if j >= len(self.text):
                raise Unreadable("an object is never closed", cut=True)
            if self.text[j] == close:
                return out, j + 1
            key, j = self._key(j)
            j = _skip(self.text, j)
            if j >= len(self.text):
                raise Unreadable("an object is never closed", cut=True)
            if self.text[j] == "=":
                if "key=value pairs instead of key:value" not in self.errors:
                    self.errors.append("key=value pairs instead of key:value")
            elif self.text[j] != ":":
                raise Unreadable(f"no ':' after key {key!r}")
            value, j = self.value(_skip(self.text, j + 1), close)
            out[key] = value
            j = _skip(self.text, j)
            if j < len(self.text) and self.text[j] == ",":
                j = _skip(self.text, j + 1)

    def _key(self, j: int) -> tuple[str, int]:
        delim = self._delimiter_at(j)
        if delim:
            return self._delimited(j, delim)
        if self.text[j] == '"':
            key, end = self._json_string(j)
            return key, end
        found = _BARE_KEY.match(self.text, j)
        if found is None:
            raise Unreadable(f"unexpected {self.text[j]!r} where a key belongs")
        return found.group(0), found.end()

    def value(self, j: int, close: str) -> tuple[Any, int]:
        if j >= len(self.text):
            raise Unreadable("a value is missing", cut=True)
        delim = self._delimiter_at(j)
        if delim:
            return self._delimited(j, delim)
        ch = self.text[j]
        if ch == '"':
            return self._json_string(j)
        if ch == "{":
            return self.mapping(j, "}")
        if ch == "[":
            return self._sequence(j)
        return self._bare(j, close)

    def _sequence(self, i: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        j = _skip(self.text, i + 1)
        while True:
            if j >= len(self.text):
                raise Unreadable("an array is never closed", cut=True)
            if self.text[j] == "]":
                return items, j + 1
            item, j = self.value(j, "]")
            items.append(item)
            j = _skip(self.text, j)
            if j < len(self.text) and self.text[j] == ",":
                j = _skip(self.text, j + 1)
            elif j < len(self.text) and self.text[j] != "]":
                raise Unreadable(f"unexpected {self.text[j]!r} in an array")

    def _bare(self, j: int, close: str) -> tuple[Any, int]:
        found = _bare_end(close, self.delimiters).search(self.text, j)
        k = found.start() if found else len(self.text)
        if k >= len(self.text):
            raise Unreadable("a value is never ended", cut=True)
        word = self.text[j:k].strip()
        if not word:
            raise Unreadable(f"a value is missing before {self.text[k]!r}")
        return _literal(word), k


@lru_cache(maxsize=16)
def _bare_end(close: str, delimiters: tuple[str, ...]) -> re.Pattern[str]:
    """Where a bare word ends: a separator, a closing bracket, a line end or a string delimiter."""
    return re.compile("|".join(re.escape(c) for c in sorted({",", "}", "]", close, "\n", *delimiters})))


def _literal(word: str) -> Any:
    low = word.lower()
    if low in _LITERALS:
        return _LITERALS[low]
    if _NUMBER.fullmatch(word):
        if re.fullmatch(r"[+-]?\d+", word):
            return int(word)
        number = float(word)
        return number if math.isfinite(number) else word
    return word
