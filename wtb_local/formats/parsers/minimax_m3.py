"""MiniMax-M3 tool calls: every tag carries the namespace token `]<]minimax[>[` and a parameter's name is its
tag name,

    ]<]minimax[>[<tool_call>
    ]<]minimax[>[<invoke name="NAME">]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[</invoke>
    ]<]minimax[>[</tool_call>

Objects are nested child tags, arrays repeated `<item>` children, scalars bare text. A scalar is typed by
the tool schema (a string stays exactly as written); where the schema gives no type, text that is a JSON
number, `true`, `false`, `null`, `{}` or `[]` is that value (the template writes numbers and booleans so)
and anything else a string. Child tags are structure whatever the schema says, and a tag repeated among
siblings makes an array. Tag names are read up to the closing `>`, so `-A` or `-n` are names too.
Reasoning: `<mm:think>…</mm:think>`; with thinking disabled the prompt pre-fills `</mm:think>`, with
thinking enabled `<mm:think>`, and in adaptive mode (the default) the model writes either itself.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, ClassVar

from wtb_local.contract.messages import JSONObject, ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    arguments_object,
    coerce_value,
    dumps_arguments,
    is_truncated,
    join_content,
    split_reasoning,
    tool_schemas,
)
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens

NS = "]<]minimax[>["
OPEN, CLOSE = f"{NS}<tool_call>", f"{NS}</tool_call>"
THINK_OPEN, THINK_CLOSE = "<mm:think>", "</mm:think>"
_TAG = re.compile(re.escape(NS) + r"<(/?)([^<>]+)>")
_INVOKE = re.compile(r'invoke\s+name\s*=\s*"([^"]*)"\s*')
_LITERALS: dict[str, object] = {"true": True, "false": False, "null": None, "{}": {}, "[]": []}

Node = Any  # str (a leaf's text) or list[tuple[str, Node]] (child elements in order)


class MiniMaxM3Parser(ToolParser):
    name = "minimax_m3"
    vllm_names: ClassVar[tuple[str, ...]] = ("minimax_m3",)
    families = ("MiniMax-M3",)
    model_patterns = (r"minimax-m3",)
    template_markers = ("]<]minimax[>[",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "")
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"), open_tag=THINK_OPEN,
                                          close_tag=THINK_CLOSE, call_markers=(OPEN, f"{NS}<invoke"))
        reader = _Reader(tools, is_truncated(finish_reason))
        pieces: list[str] = []
        pos = 0
        while True:
            start = rest.find(OPEN, pos)
            if start < 0:
                pieces.append(reader.bare(rest[pos:]))
                break
            pieces.append(reader.bare(rest[pos:start]))
            close = rest.find(CLOSE, start + len(OPEN))
            nxt = rest.find(OPEN, start + len(OPEN))
            closed = close >= 0 and (nxt < 0 or close < nxt)
            end = close if closed else (nxt if nxt >= 0 else len(rest))
            after = end + len(CLOSE) if closed else end
            found = reader.block(rest[start + len(OPEN):end], closed=closed, last=nxt < 0)
            if not found and not (reader.truncated and not closed):
                pieces.append(rest[start:after])  # nothing readable: the text stays for analysis
            pos = after
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=reader.calls,
                           errors=reader.errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"{THINK_OPEN}{reasoning}{THINK_CLOSE}" if reasoning is not None else THINK_CLOSE
        if not tool_calls:
            return head + (content or "")
        invokes = "".join(
            f'{NS}<invoke name="{c.name}">'
            + "".join(_element(k, v) for k, v in (arguments_object(c.arguments) or {}).items())
            + f"{NS}</invoke>\n" for c in tool_calls)
        return head + (content or "") + f"{OPEN}\n{invokes}{CLOSE}"


def _element(key: str, value: Any) -> str:
    return f"{NS}<{key}>{_xml(value)}{NS}</{key}>"


def _xml(value: Any) -> str:
    """A value as the template writes it; `null` and empty containers, which it would leave out or write as
    nothing, are written as JSON so that they read back."""
    if isinstance(value, dict):
        return "".join(_element(k, v) for k, v in value.items()) if value else "{}"
    if isinstance(value, list):
        return "".join(_element("item", v) for v in value) if value else "[]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return str(value)


class _Reader:
    def __init__(self, tools: list[ToolSchema] | None, truncated: bool) -> None:
        self.schemas = tool_schemas(tools)
        self.truncated = truncated
        self.calls: list[ParsedCall] = []
        self.errors: list[str] = []

    def block(self, body: str, *, closed: bool, last: bool) -> list[ParsedCall]:
        """The calls of one `<tool_call>` block's inside."""
        cut = self.truncated and last and not closed
        heads = [m for m in _TAG.finditer(body) if not m.group(1) and _INVOKE.fullmatch(m.group(2))]
        if not heads:
            if cut:
                self.errors.append(TRUNCATED)
            else:
                self.errors.append(f"tool call block without an invoke: {body.strip()[:60]!r}")
            return []
        found: list[ParsedCall] = []
        for n, head in enumerate(heads):
            limit = heads[n + 1].start() if n + 1 < len(heads) else len(body)
            close = body.find(f"{NS}</invoke>", head.end(), limit)
            if close < 0 and cut and n == len(heads) - 1:
                self.errors.append(TRUNCATED)
                break
            call = self._invoke(head, body[head.end():close if close >= 0 else limit])
            if call is not None:
                found.append(call)
                if close < 0:
                    self.errors.append(f"invoke {call.name!r} without its closing tag; call kept")
        if not closed and found and not cut:
            self.errors.append(f"no {CLOSE} (an unterminated block); calls kept")
        self.calls += found
        return found

    def bare(self, text: str) -> str:
        """Text outside blocks, minus invokes written without their block (read as calls, with an error)."""
        heads = [m for m in _TAG.finditer(text) if not m.group(1) and _INVOKE.fullmatch(m.group(2))]
        if not heads:
            return text
        closes = list(re.finditer(re.escape(f"{NS}</invoke>"), text))
        end = closes[-1].end() if closes and closes[-1].start() > heads[0].start() else len(text)
        before = len(self.calls)
        self.block(text[heads[0].start():end], closed=True, last=False)
        if len(self.calls) == before:
            return text
        self.errors.append(f"invoke outside a {OPEN} block; call(s) kept")
        return text[:heads[0].start()] + text[end:]

    def _invoke(self, head: re.Match[str], body: str) -> ParsedCall | None:
        name = _INVOKE.fullmatch(head.group(2)).group(1).strip()  # type: ignore[union-attr]
        if not name:
            self.errors.append("invoke without a function name")
            return None
        children = self._tree(name, body)
        schema = {"type": "object", "properties": self.schemas.get(name, {}).get("properties") or {}}
        value = _object(children, schema)
        return ParsedCall(name=name, arguments=dumps_arguments(value))

    def _tree(self, name: str, body: str) -> list[tuple[str, Node]]:
        """The child elements of an invoke, as a tree; unbalanced tags are closed where they can be, with
        an error."""
        root: list[tuple[str, Node]] = []
        # open elements: (tag name, its children, where its text starts)
        stack: list[tuple[str, list[tuple[str, Node]], int]] = [("", root, 0)]

        def pop(end: int) -> None:
            key, children, start = stack.pop()
            stack[-1][1].append((key, children if children else body[start:end]))

        for tag in _TAG.finditer(body):
            closing, key = bool(tag.group(1)), tag.group(2)
            if not closing:
                stack.append((key, [], tag.end()))
                continue
            depth = next((i for i in range(len(stack) - 1, 0, -1) if stack[i][0] == key), None)
            if depth is None:
                self.errors.append(f"call {name!r}: a closing tag {key!r} that opens nowhere")
                continue
            while len(stack) > depth + 1:  # elements left open inside this one
                self.errors.append(f"call {name!r}: tag {stack[-1][0]!r} never closed")
                pop(tag.start())
            pop(tag.start())
        while len(stack) > 1:
            self.errors.append(f"call {name!r}: tag {stack[-1][0]!r} never closed")
            pop(len(body))
        return root


# --- typing the tree by the schema --------------------------------------------------------------------


def _branches(schema: Any) -> list[JSONObject]:
    """The schema and its anyOf/oneOf alternatives (one level), as dicts."""
    if not isinstance(schema, dict):
        return []
    return [schema, *(b for b in (schema.get("anyOf") or schema.get("oneOf") or []) if isinstance(b, dict))]


def _property(schema: Any, key: str) -> Any:
    for branch in _branches(schema):
        props = branch.get("properties")
        if isinstance(props, dict) and key in props:
            return props[key]
        extra = branch.get("additionalProperties")
        if isinstance(extra, dict):
            return extra
    return None


def _items(schema: Any) -> Any:
    return next((b["items"] for b in _branches(schema) if isinstance(b.get("items"), dict)), None)


def _object(children: list[tuple[str, Node]], schema: Any) -> JSONObject:
    """Child elements as an object; a key repeated among siblings collects its values in an array."""
    grouped: dict[str, list[Node]] = {}
    for key, node in children:
        grouped.setdefault(key, []).append(node)
    out: JSONObject = {}
    for key, nodes in grouped.items():
        sub = _property(schema, key)
        out[key] = _value(nodes[0], sub) if len(nodes) == 1 else [_value(n, _items(sub)) for n in nodes]
    return out


def _value(node: Node, schema: Any) -> Any:
    if isinstance(node, list):
        if all(key == "item" for key, _ in node):
            item = _items(schema)
            return [_value(child, item) for _, child in node]
        return _object(node, schema)
    return _leaf(node, schema)


def _leaf(text: str, schema: Any) -> Any:
    """A scalar's text: typed by the schema when it names a type, else a JSON literal or a string."""
    if any(b.get("type") or b.get("enum") for b in _branches(schema)):
        stripped = text.strip()
        wants = {t for b in _branches(schema) for t in ([b["type"]] if isinstance(b.get("type"), str)
                                                          else b.get("type") or [])}
        if stripped == "" and not wants & {"string"}:
            if wants & {"object"}:
                return {}
            if wants & {"array"}:
                return []
        return coerce_value(text, schema)
    return _literal(text)


def _literal(text: str) -> Any:
    stripped = text.strip()
    if stripped in _LITERALS:
        value = _LITERALS[stripped]
        return dict(value) if isinstance(value, dict) else list(value) if isinstance(value, list) else value
    if re.fullmatch(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?", stripped):
        number = json.loads(stripped)
        if not isinstance(number, float) or math.isfinite(number):
            return number
    return text
