"""Kimi-K3 replies in XTML: channels opened by `<|open|>TAG attrs<|sep|>` and closed by `<|close|>TAG<|sep|>`.

    [<|open|>think<|sep|>]reasoning<|close|>think<|sep|>
    <|open|>response<|sep|>content<|close|>response<|sep|>
    <|open|>tools<|sep|>
      <|open|>call tool="NAME" index="1"<|sep|>
        <|open|>argument key="K" type="string|number|boolean|null|object|array"<|sep|>VALUE<|close|>argument<|sep|>
      <|close|>call<|sep|>
    <|close|>tools<|sep|><|close|>message<|sep|>

The generation prompt opens the think channel (thinking, the default) or the response channel (thinking
off), so a completion starts inside one of them without its opening tag. A `string` argument is the raw
text; every other type is JSON; a call may instead carry one `<|open|>json type="object"<|sep|>{…}` block.
Attribute values are XML-escaped (`&amp;`, `&quot;`), argument bodies are not. Calls are read whether or not
the request declared tools (SGLang strips the tools channel when none are declared; WildToolBench always
declares them). Options: `thinking` (True: the prompt pre-filled the think opener).
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    coerce_value,
    dumps_arguments,
    is_truncated,
    json_type,
    tool_schemas,
)
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens

OPEN, CLOSE, SEP, END_OF_MSG = "<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"
_TAG = re.compile(r"<\|(open|close)\|>([A-Za-z_][\w-]*)([^<]*?)<\|sep\|>")
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')
_JSON_TYPES = ("number", "boolean", "null", "object", "array")


def close_tag(name: str) -> str:
    return f"{CLOSE}{name}{SEP}"


def open_tag(name: str, attrs: dict[str, Any] | None = None) -> str:
    text = "".join(f' {k}="{_escape(v)}"' for k, v in (attrs or {}).items())
    return f"{OPEN}{name}{text}{SEP}"


def _escape(value: Any) -> str:
    return str(value).replace("&", "&amp;").replace('"', "&quot;")


def _unescape(value: str) -> str:
    return value.replace("&quot;", '"').replace("&amp;", "&")


class KimiK3Parser(ToolParser):
    name = "kimi_k3"
    vllm_names: ClassVar[tuple[str, ...]] = ("kimi_k3",)
    families = ("Kimi-K3",)
    model_patterns = (r"kimi-k3", r"kimi_k3")
    template_markers = ("<|open|>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = _strip_message_end(strip_end_tokens(text or "", (END_OF_MSG,)))
        state = _Reader(text, tools, is_truncated(finish_reason))
        state.read(self._first_channel(text))
        reasoning = "".join(state.reasoning).strip() or None
        content = "".join(state.content).strip() or None
        return ParseResult(reasoning=reasoning, content=content, tool_calls=state.calls, errors=state.errors)

    def _first_channel(self, text: str) -> str | None:
        """The channel a completion starts in when it does not open one itself (the prompt's pre-fill)."""
        if text.lstrip().startswith(OPEN):
            return None
        first_open = text.find(OPEN)
        first_open = len(text) if first_open < 0 else first_open
        for channel in ("think", "response"):
            at = text.find(close_tag(channel))
            if 0 <= at < first_open:
                return channel
        thinking = self.options.get("thinking")
        if thinking:
            return "think"
        return "response"

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        parts = []
        if reasoning is not None:
            parts.append(open_tag("think") + reasoning + close_tag("think"))
        parts.append(open_tag("response") + (content or "") + close_tag("response"))
        if tool_calls:
            parts.append(open_tag("tools"))
            for index, call in enumerate(tool_calls, start=1):
                parts.append(open_tag("call", {"tool": call.name, "index": index}))
                try:
                    args = json.loads(call.arguments)
                except ValueError:
                    args = None
                if isinstance(args, dict):
                    for key, value in args.items():
                        parts.append(open_tag("argument", {"key": key, "type": json_type(value, integers=False)})
                                     + (value if isinstance(value, str) else dumps_arguments(value))
                                     + close_tag("argument"))
                else:
                    parts.append(open_tag("json", {"type": "object"}) + call.arguments + close_tag("json"))
                parts.append(close_tag("call"))
            parts.append(close_tag("tools"))
        return "".join(parts) + close_tag("message")


def _strip_message_end(text: str) -> str:
    """The end of the assistant message (`<|close|>message<|sep|>`) is markup, not text."""
    stripped = text.rstrip()
    return stripped[: -len(close_tag("message"))] if stripped.endswith(close_tag("message")) else text


class _Reader:
    """One pass over the channels of a completion."""

    def __init__(self, text: str, tools: list[ToolSchema] | None, truncated: bool) -> None:
        self.text = text
        self.schemas = tool_schemas(tools)
        self.truncated = truncated
        self.reasoning: list[str] = []
        self.content: list[str] = []
        self.calls: list[ParsedCall] = []
        self.errors: list[str] = []

    def read(self, implicit: str | None) -> None:
        pos = 0
        if implicit is not None:
            pos = self._channel(implicit, 0)
        while pos < len(self.text):
            tag = _TAG.search(self.text, pos)
            if tag is None:
                self.content.append(self.text[pos:])
                return
            self.content.append(self.text[pos:tag.start()])
            kind, name = tag.group(1), tag.group(2)
            if kind == "open" and name in ("think", "response", "tools"):
                pos = self._channel(name, tag.end())
            elif kind == "open" and name == "call":  # a call written without its tools channel
                self.errors.append("call outside a tools channel; call kept")
                pos = self._calls(tag.start(), "tools", outside=True)
            elif name == "message":  # the message's own markup (an echoed header, an early end)
                pos = tag.end()
            else:
                self.content.append(tag.group(0))
                pos = tag.end()

    def _channel(self, name: str, start: int) -> int:
        """Read channel `name` from `start`; returns where reading goes on."""
        if name == "tools":
            return self._calls(start, "tools")
        end = self.text.find(close_tag(name), start)
        if end < 0:  # never closed: it ends where the next channel opens, or at the end
            nxt = _TAG.search(self.text, start)
            end = nxt.start() if nxt else len(self.text)
            resume = end
        else:
            resume = end + len(close_tag(name))
        (self.reasoning if name == "think" else self.content).append(self.text[start:end])
        return resume

    def _calls(self, start: int, channel: str, outside: bool = False) -> int:
        close = self.text.find(close_tag(channel), start)
        end = close if close >= 0 and not outside else len(self.text)
        body = self.text[start:end]
        heads = [m for m in _TAG.finditer(body) if m.group(1) == "open" and m.group(2) == "call"]
        if not heads:
            if body.strip() and not (self.truncated and close < 0):
                self.errors.append(f"tools channel without a call: {body.strip()[:60]!r}")
                self.content.append(body)
            elif self.truncated and close < 0:
                self.errors.append(TRUNCATED)
            return len(self.text) if close < 0 or outside else close + len(close_tag(channel))
        used = 0
        for n, head in enumerate(heads):
            limit = heads[n + 1].start() if n + 1 < len(heads) else len(body)
            call_end = body.find(close_tag("call"), head.end(), limit)
            if call_end < 0 and self.truncated and close < 0 and n == len(heads) - 1:
                self.errors.append(TRUNCATED)
                used = limit
                break
            self._call(head, body[head.end():call_end if call_end >= 0 else limit])
            if call_end < 0:
                self.errors.append(f"call {self._name(head)!r} without {close_tag('call')}; call kept")
            used = call_end + len(close_tag("call")) if call_end >= 0 else limit
        if outside:
            return start + used
        if close < 0 and not (self.truncated and TRUNCATED in self.errors):
            self.errors.append(f"no {close_tag(channel)} (an unterminated tools channel); calls kept")
        return len(self.text) if close < 0 else close + len(close_tag(channel))

    @staticmethod
    def _name(head: re.Match[str]) -> str:
        attrs = dict(_ATTR.findall(head.group(3)))
        return _unescape(attrs.get("tool", "")).strip()

    def _call(self, head: re.Match[str], body: str) -> None:
        name = self._name(head)
        if not name:
            self.errors.append("call without a tool name")
            return
        props = self.schemas.get(name, {}).get("properties")
        props = props if isinstance(props, dict) else {}
        args: dict[str, Any] = {}
        tags = list(_TAG.finditer(body))
        json_block = next((t for t in tags if t.group(1) == "open" and t.group(2) == "json"), None)
        if json_block is not None:
            end = body.find(close_tag("json"), json_block.end())
            raw = body[json_block.end():end if end >= 0 else len(body)].strip()
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):
                value = None
            if isinstance(value, dict):
                self.calls.append(ParsedCall(name=name, arguments=raw))
            else:
                self.errors.append(f"call {name!r}: the json block is not a JSON object; kept as raw text")
                self.calls.append(ParsedCall(name=name, arguments=raw))
            return
        opens = [t for t in tags if t.group(1) == "open" and t.group(2) == "argument"]
        for n, arg in enumerate(opens):
            limit = opens[n + 1].start() if n + 1 < len(opens) else len(body)
            end = body.find(close_tag("argument"), arg.end(), limit)
            raw = body[arg.end():end if end >= 0 else limit]
            attrs = dict(_ATTR.findall(arg.group(3)))
            key = _unescape(attrs.get("key", ""))
            if end < 0:
                self.errors.append(f"call {name!r}: argument {key!r} without {close_tag('argument')}")
            if key in args:
                self.errors.append(f"call {name!r}: argument {key!r} given twice; the last one is kept")
            args[key] = self._value(name, key, raw, _unescape(attrs.get("type", "")), props.get(key))
        self.calls.append(ParsedCall(name=name, arguments=dumps_arguments(args)))

    def _value(self, name: str, key: str, raw: str, kind: str, schema: Any) -> Any:
        if kind == "string":
            return raw
        if kind in _JSON_TYPES:
            try:
                return json.loads(raw)
            except (ValueError, RecursionError):
                self.errors.append(f"call {name!r}: argument {key!r} of type {kind} is not JSON; kept as text")
                return raw
        return coerce_value(raw, schema if isinstance(schema, dict) else None)
