"""Tencent Hy4 (Hy4-preview; vLLM `hy_v4`): GLM-style argument pairs straight after the name, in one wrapper,

    <tool_calls><tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value></tool_call>…</tool_calls>

and `<tool_call>NAME</tool_call>` without arguments (Hy3's `<tool_sep>` is gone). Every structural token may
carry the checkpoint's suffix (`<tool_call:opensource>`); any suffix is read. Values are raw text typed by
the tool schema, with the type names and the order vLLM's reader uses (`int`, `uint32`, `double`, `bool`, `list`,
`dict`, …; a union holding a string still reads a JSON object or array as one); a repeated key keeps its
last value. Markup that does not follow the grammar
(an unclosed call, text between a value and the call's end, a call outside a wrapper, a closer before its
opener) is no call: it stays in the content, with an error, as vLLM's strict reader returns it; the
well-formed calls next to it are read (docs/parser-policies.md, "broken calls"). Reasoning:
`<think>…</think>` (any suffix).
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any, ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.end_of_turn import END_OF_TURN
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    _to_json_value,
    dumps_arguments,
    is_truncated,
    join_content,
    split_reasoning,
    tool_schemas,
)
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.glm47 import arg_pairs
from wtb_local.formats.parsers.hermes import strip_end_tokens

_SFX = r"(?::[^<>\s]*)?>"


def _tok(name: str, closing: bool = False) -> str:
    return "<" + ("/" if closing else "") + name + _SFX


_THINK = re.compile(r"<(/?)think" + _SFX)
_WRAP_OPEN, _WRAP_CLOSE = re.compile(_tok("tool_calls")), re.compile(_tok("tool_calls", True))
_CALL = re.compile(_tok("tool_call") + r"(?P<body>.*?)" + _tok("tool_call", True), re.DOTALL)
_CALL_OPEN = re.compile(_tok("tool_call"))
_NAME = re.compile(r"\s*(?P<name>[^\s<>]+)\s*")
_PAIR = re.compile(_tok("arg_key") + r"(?P<key>.*?)" + _tok("arg_key", True) + r"\s*" + _tok("arg_value")
                   + r"(?P<value>.*?)" + _tok("arg_value", True) + r"\s*", re.DOTALL)
_ANY = re.compile(r"</?(?:tool_calls|tool_call|arg_key|arg_value)" + _SFX)

# Type names Hy4's tools use besides JSON Schema's, as vLLM's Hy4 reader maps them: exact names, then prefixes.
_ALIASES = {"str": "string", "text": "string", "varchar": "string", "char": "string", "enum": "string",
            "bool": "boolean", "binary": "boolean", "int": "integer", "float": "number", "double": "number",
            "list": "array", "dict": "object", "map": "object"}
_INTEGER_PREFIXES = ("int", "uint", "long", "short", "unsigned")
_NUMBER_PREFIXES = ("num", "float")
_BASIC = frozenset({"string", "boolean", "integer", "number"})


def _normal_type(kind: str) -> str:
    if kind in _ALIASES:
        return _ALIASES[kind]
    low = kind.lower()
    if low.startswith(_INTEGER_PREFIXES):
        return "integer"
    return "number" if low.startswith(_NUMBER_PREFIXES) else kind


def _types(schema: Any) -> set[str]:
    """The parameter's types, aliases normalised, null left out; a schema without a type is a string."""
    if not isinstance(schema, dict):
        return {"string"}
    kind = schema.get("type")
    if isinstance(kind, list):
        options: list[Any] = [{"type": k} for k in kind]
    elif kind is not None:
        options = [schema]
    else:
        options = schema.get("anyOf") or schema.get("oneOf") or [{"type": "string"}]
    found = {_normal_type(str(o.get("type", "string"))) for o in options if isinstance(o, dict)}
    return found - {"null"}


def _value(raw: str, schema: Any) -> Any:
    """One raw value typed as Hy4's reader types it: boolean, integer, number (a float when written with a
    point or an exponent), then JSON for any other declared type, then the string; with no string type, JSON
    or a Python literal, else the text. A non-finite number stays text (docs/parser-policies.md)."""
    if raw.strip() == "null" and isinstance(schema, dict) and "null" in str(schema.get("type", schema)):
        return None  # a nullable parameter's null (vLLM's reader keeps the text "null")
    types = _types(schema)
    low = raw.lower()
    if "boolean" in types and low in ("true", "false"):
        return low == "true"
    if "integer" in types and re.fullmatch(r"\s*[+-]?\d+\s*", raw):
        return int(raw)
    if "number" in types:
        try:
            number = float(raw) if any(c in raw for c in ".eE") else int(raw)
        except ValueError:
            number = None
        if number is not None and math.isfinite(number):
            return number
    if types - _BASIC:
        try:
            return json.loads(raw)
        except ValueError:
            pass
    if "string" in types:
        return raw
    for loader in (json.loads, ast.literal_eval):
        try:
            value = loader(raw)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if not (isinstance(value, float) and not math.isfinite(value)):
            return _to_json_value(value)
    return raw


class HyV4Parser(ToolParser):
    name = "hy_v4"
    vllm_names: ClassVar[tuple[str, ...]] = ("hy_v4",)
    families = ("Hy4", "Hy4-preview")
    model_patterns = (r"tencent/hy4", r"(^|/)hy-?4")
    template_markers = ()  # no template is public
    priority = 6

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "", END_OF_TURN)
        text = _THINK.sub(lambda m: f"<{m.group(1)}think>", text)
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"),
                                          call_markers=("<tool_calls", "<tool_call"))
        schemas = tool_schemas(tools)
        pieces: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        pos = 0
        while (opener := _WRAP_OPEN.search(rest, pos)) is not None:
            pieces.append(self._outside(rest[pos:opener.start()], errors))
            closer = _WRAP_CLOSE.search(rest, opener.end())
            nxt = _WRAP_OPEN.search(rest, opener.end())
            closed = closer is not None and (nxt is None or closer.start() < nxt.start())
            inner_end = closer.start() if closed and closer is not None else (nxt.start() if nxt else len(rest))
            end = closer.end() if closed and closer is not None else inner_end
            cut = not closed and nxt is None and is_truncated(finish_reason)
            found, ok = self._block(rest[opener.end():inner_end], schemas, errors, cut=cut)
            calls += found
            if not found and not cut:
                pieces.append(rest[opener.start():end])  # nothing readable: the text stays, with its error
                if ok:
                    errors.append("a <tool_calls> block without a call; kept as text")
            elif not closed and not cut:
                errors.append("no </tool_calls> (an unterminated block); calls kept")
            pos = end
        pieces.append(self._outside(rest[pos:], errors))
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    @staticmethod
    def _outside(text: str, errors: list[str]) -> str:
        if _ANY.search(text):
            errors.append("tool-call markup outside a <tool_calls> block (a stray or misplaced tag); kept as text")
        return text

    def _block(self, inner: str, schemas: dict[str, dict[str, Any]], errors: list[str], *,
               cut: bool) -> tuple[list[ParsedCall], bool]:
        """The calls of one wrapper's inside, and whether it followed the grammar. A malformed call makes
        the whole block text unless a well-formed call sits next to it."""
        found: list[ParsedCall] = []
        pos = 0
        ok = True
        while pos < len(inner):
            gap = inner[pos:]
            if not gap.strip():
                break
            call = _CALL.match(inner, pos + len(gap) - len(gap.lstrip()))
            if call is None or _CALL_OPEN.search(call.group("body")):
                if cut and _CALL_OPEN.match(inner, pos + len(gap) - len(gap.lstrip())):
                    errors.append(TRUNCATED)
                    return found, True
                errors.append(f"a malformed <tool_call> (no matching </tool_call>): {gap.strip()[:60]!r}; "
                              "kept as text")
                return found, False
            parsed = self._call(call.group("body"), schemas)
            if parsed is None:
                errors.append(f"a <tool_call> that does not follow the grammar: {call.group(0)[:60]!r}; "
                              "kept as text")
                ok = False
            else:
                found.append(parsed)
            pos = call.end()
        if cut:  # the cut may have lost further calls of the block
            errors.append(TRUNCATED)
        return found, ok

    @staticmethod
    def _call(body: str, schemas: dict[str, dict[str, Any]]) -> ParsedCall | None:
        name = _NAME.match(body)
        if name is None or not name.group("name"):
            return None
        props = schemas.get(name.group("name"), {}).get("properties")
        props = props if isinstance(props, dict) else {}
        values: dict[str, Any] = {}
        pos = name.end()
        while pos < len(body):
            pair = _PAIR.match(body, pos)
            if pair is None:
                return None
            key = pair.group("key").strip()
            values[key] = _value(pair.group("value"), props.get(key))
            pos = pair.end()
        return ParsedCall(name=name.group("name"), arguments=dumps_arguments(values))

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        head = f"<think>{reasoning}</think>" if reasoning is not None else ""
        if not tool_calls:
            return head + (content or "")
        calls = "".join(f"<tool_call>{c.name}{arg_pairs(c.arguments)}</tool_call>" for c in tool_calls)
        return head + (content or "") + f"<tool_calls>{calls}</tool_calls>"
