"""Helpers every tool-call parser shares: reasoning split, exact JSON spans, schema typing, pythonic calls.

Conventions (the conformance suite checks them for every parser):
- content is the text outside call markup, joined and stripped; `None` when nothing is left;
- reasoning is the stripped text of the thinking block; `None` when absent or empty (thinking off);
- JSON-native formats keep each call's argument text exactly as the model wrote it (docs/evaluation.md §5
pairs
  same-name calls by this text); other formats build it with `dumps_arguments`;
- a cut-off call (finish_reason "length") is reported with `TRUNCATED`, never returned half-written.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from wtb_local.contract.messages import JSONObject, ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers.base import dumps_arguments

__all__ = [
    "TRUNCATED",
    "arguments_object",
    "call_from_json_object",
    "coerce_arguments",
    "coerce_value",
    "decode_json_at",
    "dumps_arguments",
    "error_result",
    "find_closing",
    "is_truncated",
    "iter_json_values",
    "join_content",
    "object_member_spans",
    "parse_pythonic_calls",
    "pythonic_call_text",
    "schema_types",
    "skip_ws",
    "split_reasoning",
    "tool_schemas",
]

TRUNCATED = "truncated tool call"

_JSON = json.JSONDecoder()
_WS = " \t\n\r"


# --- content and reasoning -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """What a parser made of one block that starts at an opening marker: its calls, where scanning goes on,
    the block's own text where it stays content (nothing readable in it), and whether the scan ends there
    (a block cut off at the token limit: what follows it is not content)."""

    calls: list[ParsedCall]
    end: int
    text: str = ""
    stop: bool = False


def scan_blocks(rest: str, open_tag: str, read: Callable[[int, list[str]], Block]
                ) -> tuple[list[str], list[ParsedCall], list[str]]:
    """The text between the blocks that open with `open_tag`, and the calls and errors of each, in order;
    `read(start, errors)` reads the block at `start` and appends its errors to `errors`."""
    pieces: list[str] = []
    calls: list[ParsedCall] = []
    errors: list[str] = []
    pos = 0
    while (start := rest.find(open_tag, pos)) >= 0:
        pieces.append(rest[pos:start])
        block = read(start, errors)
        calls += block.calls
        if block.text:
            pieces.append(block.text)
        if block.stop:
            return pieces, calls, errors
        pos = block.end
    pieces.append(rest[pos:])
    return pieces, calls, errors


def join_content(pieces: Iterable[str]) -> str | None:
    """Non-call text pieces joined as written, stripped; None when nothing but whitespace is left."""
    text = "".join(pieces).strip()
    return text or None


def split_reasoning(
    text: str,
    *,
    thinking: bool | None = None,
    open_tag: str = "<think>",
    close_tag: str = "</think>",
    call_markers: tuple[str, ...] = (),
) -> tuple[str | None, str]:
    """Split a leading thinking block off `text`; returns (reasoning or None, rest).

    `thinking`: None = decide from the text; True = the prompt pre-filled the opening tag, so the
    completion starts inside the block even without any tag; False = thinking off, only an explicit
    (usually empty) block at the very start is removed. A block that is never closed ends at the first
    call marker (the model started calling without closing it) or else runs to the end (cut off while
    thinking).
    """
    stripped = text.lstrip()
    if stripped.startswith(open_tag):
        body_start = len(text) - len(stripped) + len(open_tag)
    elif thinking is False:
        return None, text
    elif close_tag in text or thinking:
        body_start = 0
    else:
        return None, text
    close = text.find(close_tag, body_start)
    if close >= 0:
        reasoning, rest = text[body_start:close], text[close + len(close_tag) :]
    else:
        cut = min((i for i in (text.find(m, body_start) for m in call_markers) if i >= 0), default=-1)
        reasoning, rest = (text[body_start:cut], text[cut:]) if cut >= 0 else (text[body_start:], "")
    return reasoning.strip() or None, rest


# --- JSON text as written ----------------------------------------------------------------------------------


def json_type(value: Any, *, integers: bool = True) -> str:
    """The JSON Schema type name of a decoded JSON value; with `integers` off an integer is a "number" (the
    formats that write one type name for both)."""
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, int):
        return "integer" if integers else "number"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def decode_json_at(text: str, start: int) -> tuple[Any, int] | None:
    """(value, end) of the JSON value starting at `start` (leading whitespace skipped), None if invalid."""
    try:
        return _JSON.raw_decode(text, skip_ws(text, start))
    except (ValueError, RecursionError):
        return None


def object_member_spans(text: str, start: int) -> dict[str, tuple[int, int]] | None:
    """Spans of each member value of the JSON object whose `{` is at `start`, so a caller can cut out a
    member's text exactly as written. None when the object is not valid JSON."""
    try:
        i = skip_ws(text, start)
        if text[i] != "{":
            return None
        spans: dict[str, tuple[int, int]] = {}
        i = skip_ws(text, i + 1)
        if text[i] == "}":
            return spans
        while True:
            key, i = _JSON.raw_decode(text, i)
            i = skip_ws(text, i)
            if not isinstance(key, str) or text[i] != ":":
                return None
            i = skip_ws(text, i + 1)
            _, end = _JSON.raw_decode(text, i)
            spans[key] = (i, end)
            i = skip_ws(text, end)
            if text[i] == "}":
                return spans
            if text[i] != ",":
                return None
            i = skip_ws(text, i + 1)
    except (ValueError, IndexError, RecursionError):
        return None


def iter_json_values(text: str, openers: str = "{[", start: int = 0) -> Iterator[tuple[int, int, Any]]:
    """Every top-level JSON value that starts with one of `openers` in `text`: (start, end, value).
    Invalid candidates are skipped one character at a time, so a broken object never hides a later one."""
    i = start
    while True:
        hits = [p for p in (text.find(o, i) for o in openers) if p >= 0]
        if not hits:
            return
        i = min(hits)
        decoded = decode_json_at(text, i)
        if decoded is None:
            i += 1
            continue
        value, end = decoded
        yield i, end, value
        i = end


def arguments_object(arguments: str) -> JSONObject | None:
    """The arguments text as a JSON object, None when it is not one."""
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def call_from_json_object(
    text: str,
    start: int,
    value: Any,
    argument_keys: tuple[str, ...] = ("arguments", "parameters"),
    *,
    missing_ok: bool = False,
) -> ParsedCall | None:
    """A call from the JSON object `value` decoded at `start` in `text`: `{"name": N, "arguments": {...}}`.

    The argument text is the member's text as written; a JSON *string* holding the arguments (some models
    double-encode) is unwrapped to its content. Without an arguments key the object is a call with no
    arguments only when `missing_ok` (inside explicit call markup); in bare JSON `{"name": "f"}` is prose."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    key = next((k for k in argument_keys if k in value), None)
    if key is None:
        return ParsedCall(name=value["name"], arguments="{}") if missing_ok else None
    spans = object_member_spans(text, start) or {}
    if key in spans:
        raw = text[spans[key][0] : spans[key][1]]
    else:
        raw = json.dumps(value[key], ensure_ascii=False)
    args = value[key]
    if isinstance(args, str):
        raw = args
    elif args is None:
        raw = "{}"
    call_id = value.get("id") if isinstance(value.get("id"), str) else None
    return ParsedCall(id=call_id, name=value["name"], arguments=raw)


# --- schema-driven typing (XML-style formats) ---------------------------------------------------------------


def tool_schemas(tools: list[ToolSchema] | None) -> dict[str, JSONObject]:
    """name -> parameters schema, for OpenAI-wrapped ({"type": "function", "function": {...}}) or bare tools.
    A name defined twice keeps its last definition (as the checker does)."""
    out: dict[str, JSONObject] = {}
    for tool in tools or []:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        name = fn.get("name")
        params = fn.get("parameters")
        if isinstance(name, str):
            out[name] = params if isinstance(params, dict) else {}
    return out


def _schema_types(schema: JSONObject | None) -> list[str]:
    if not isinstance(schema, dict):
        return []
    types: list[str] = []
    for branch in schema.get("anyOf") or schema.get("oneOf") or []:
        types += _schema_types(branch)
    t = schema.get("type")
    if isinstance(t, str):
        types.append(t)
    elif isinstance(t, list):
        types += [x for x in t if isinstance(x, str)]
    if not types and isinstance(schema.get("enum"), list) and all(isinstance(v, str) for v in schema["enum"]):
        types.append("string")
    return types


def schema_types(schema: dict[str, Any] | None) -> list[str]:
    """The JSON types a parameter's schema admits (anyOf/oneOf/type lists; a string enum is a string)."""
    return _schema_types(schema)


_NULLS = frozenset({"null", "none", "nil"})


def _convert(raw: str, kind: str) -> tuple[bool, Any]:
    s = raw.strip()
    low = s.lower()
    if kind in ("integer", "int"):
        if re.fullmatch(r"[+-]?\d+", s):
            return True, int(s)
        if re.fullmatch(r"[+-]?\d+\.0*", s):
            return True, int(float(s))
    elif kind in ("number", "float"):
        try:
            num = float(s)
        except ValueError:
            return False, None
        if math.isfinite(num):
            return True, int(s) if re.fullmatch(r"[+-]?\d+", s) else num
    elif kind in ("boolean", "bool"):
        if low in ("true", "false"):
            return True, low == "true"
    elif kind == "null":
        if low in _NULLS:
            return True, None
    elif kind in ("object", "array", "dict", "list"):
        want = dict if kind in ("object", "dict") else list
        for loader in (json.loads, ast.literal_eval):
            try:
                value = loader(s)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(value, want):
                return True, _to_json_value(value)
    return False, None


def coerce_value(raw: str, schema: JSONObject | None) -> Any:
    """Type one raw-text parameter value by its JSON schema (XML-style formats write values as text).

    Strings stay exactly as written; other types are tried in the schema's order (anyOf/oneOf/type lists,
    `null` included); JSON objects/arrays are decoded once. When nothing fits, or there is no schema, the
    raw string is kept: conversion never drops a value."""
    types = _schema_types(schema)
    if "null" in types and raw.strip() == "null":
        return None
    if "string" in types:
        return raw
    for kind in types:
        ok, value = _convert(raw, kind)
        if ok:
            return value
    return raw


def coerce_arguments(
    name: str, raw_values: dict[str, str], tools: list[ToolSchema] | None
) -> JSONObject:
    """All parameters of one call typed by that tool's schema (unknown tool or parameter: strings)."""
    props = tool_schemas(tools).get(name, {}).get("properties")
    props = props if isinstance(props, dict) else {}
    return {key: coerce_value(value, props.get(key)) for key, value in raw_values.items()}


# --- Python-literal call lists (pythonic formats) ---------------------------------------------------


def find_closing(text: str, start: int) -> int:
    """Index just past the bracket matching the one at `start` ([, ( or {), skipping quoted strings
    (single or double quotes, backslash escapes); -1 when it never closes."""
    pairs = {"[": "]", "(": ")", "{": "}"}
    stack: list[str] = []
    quote: str | None = None
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in pairs:
            stack.append(pairs[ch])
        elif ch in ")]}":
            if not stack or stack.pop() != ch:
                return -1
            if not stack:
                return i + 1
        i += 1
    return -1


def _to_json_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k if isinstance(k, str) else json.dumps(_to_json_value(k)): _to_json_value(v)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [_to_json_value(v) for v in items]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


_BARE_NAMES = {"true": True, "false": False, "null": None, "none": None}


def _literal(node: ast.AST) -> Any:
    # Bare names are the model writing JSON spellings (true/null) or unquoted strings (city=Paris).
    if isinstance(node, ast.Name):
        return (
            _BARE_NAMES.get(node.id.lower(), node.id)
            if node.id not in ("True", "False", "None")
            else ast.literal_eval(node)
        )
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("dict unpacking (**) in a call argument")
        return {_dict_key(k): _literal(v) for k, v in zip(node.keys, node.values)}
    return _to_json_value(ast.literal_eval(node))


def _dict_key(node: ast.AST | None) -> str:
    value = _literal(node) if node is not None else None
    return value if isinstance(value, str) else json.dumps(value)


def _call_name(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return f"{_call_name(func.value)}.{func.attr}"
    raise ValueError("call target is not a name")


def parse_pythonic_calls(source: str) -> list[tuple[str, JSONObject]]:
    """`[f(a=1), g.h(b='x')]` (or a single bare call) -> [(name, arguments)], read with `ast` (never eval).
    Raises ValueError with a short reason when the text is not such a list."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ValueError(f"not a Python call list ({type(exc).__name__})") from None
    body = tree.body
    nodes = body.elts if isinstance(body, (ast.List, ast.Tuple)) else [body]
    calls: list[tuple[str, JSONObject]] = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            raise ValueError("list item is not a function call")  # noqa: TRY004 - a parse error, not a type error
        if node.args:
            raise ValueError(f"positional arguments in call to {_call_name(node.func)}")
        args: JSONObject = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise ValueError("keyword unpacking (**) in a call")
            try:
                args[kw.arg] = _literal(kw.value)
            except (ValueError, TypeError, SyntaxError, RecursionError) as exc:
                raise ValueError(f"argument {kw.arg!r} is not a literal ({type(exc).__name__})") from None
        calls.append((_call_name(node.func), args))
    return calls


def pythonic_call_text(name: str, arguments: JSONObject) -> str:
    """`name(k=<python literal>, ...)`: how pythonic models write a call (repr gives True/None and quotes)."""
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"


# --- results ----------------------------------------------------------------------------------------


def is_truncated(finish_reason: str | None) -> bool:
    return finish_reason == "length"


def error_result(text: str, error: str, *, reasoning: str | None = None) -> ParseResult:
    """A reply that attempted a call that could not be read: no calls, the error, the text kept as content
    for analysis (the runner records the step as an error whatever the content)."""
    return ParseResult(reasoning=reasoning, content=join_content([text]), errors=[error])
