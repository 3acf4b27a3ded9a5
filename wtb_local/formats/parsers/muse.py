"""Meta Muse (Muse Spark, Muse Glimmer) replies: harmony-like messages addressed to a recipient, calls in ATEM.

    to=self<|message|>reasoning<|eom|>                      (the prompt ends with `<|start|>assistant`)
    <|start|>assistant to=user<|message|>a preamble<|eom|>
    <|start|>assistant to=get_weather<|message|><atem:function_calls>
    <atem:invoke name="get_weather">
    <atem:parameter name="city">Paris</atem:parameter>
    </atem:invoke>
    </atem:function_calls><|eot|>

`to=self` is reasoning, `to=user` and `to=commentary` are content, `to=developer` is dropped; any other
recipient is a tool channel whose body holds the invokes (one call per message; parallel calls are
consecutive messages). An invoke written in a reasoning or content message is not a call (a call written
inside `to=self` is counted as one inside the reasoning, docs/parser-policies.md §1). A message ends at
`<|eom|>`, `<|eot|>` or the next header. A value is JSON when it reads as JSON, else the text as written;
Muse Spark keeps a value the tool's schema types as a string as written (`"007"` stays `"007"`), Glimmer
decodes every value. A doubled bare name (`get_weather.get_weather`, how the template's recipient list
spells a tool without a namespace) is the declared tool `get_weather`. A bare `<|message|>` header (no
recipient) is reasoning for Spark, content for Glimmer. Text with no message framing at all is content, and
invokes in it are read as calls (the framing was lost, as with special tokens skipped).
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    dumps_arguments,
    is_truncated,
    join_content,
    json_type,
    tool_schemas,
)
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens

START, MESSAGE, EOM, EOT = "<|start|>", "<|message|>", "<|eom|>", "<|eot|>"
CALLS_OPEN, CALLS_CLOSE = "<atem:function_calls>", "</atem:function_calls>"
_HEADER = re.compile(r"(?:<\|start\|>\s*assistant)?[^\S\n]*(?:to=([A-Za-z0-9_.\-]+))?<\|message\|>")
_END = re.compile(r"<\|eom\|>|<\|eot\|>")
_INVOKE_OPEN = re.compile(r'<atem:invoke\b[^>]*?\bname="([^"]*)"[^>]*>')
_INVOKE_CLOSE = "</atem:invoke>"
_PARAM = re.compile(r'<atem:parameter\b[^>]*?\bname="([^"]*)"[^>]*>(.*?)</atem:parameter>', re.DOTALL)
_PARAM_OPEN = re.compile(r'<atem:parameter\b[^>]*?\bname="([^"]*)"[^>]*>')
_WHOLE_INVOKE = re.compile(r"<atem:invoke\b.*?</atem:invoke>", re.DOTALL)
_ANY_ATEM = re.compile(r"</?atem:(?:function_calls|invoke)\b")
_DROPPED = ("developer",)
_CONTENT = ("user", "commentary")


class MuseParser(ToolParser):
    name = "muse"
    vllm_names: ClassVar[tuple[str, ...]] = ("muse", "musespark", "musespark1x")
    families = ("Muse Spark",)
    model_patterns: ClassVar[tuple[str, ...]] = (r"muse[-_ ]?spark",)
    template_markers = (CALLS_OPEN,)
    keep_schema_strings: ClassVar[bool] = True  # Spark keeps string-typed values as written
    bare_header_is_reasoning: ClassVar[bool] = True

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "", (EOT, EOM))
        reader = _Reader(self, tools, is_truncated(finish_reason))
        if not _headers(text):
            reader.unframed(text)
        else:
            reader.read(text)
        return ParseResult(reasoning=join_content(reader.reasoning), content=join_content(reader.content),
                           tool_calls=reader.calls, errors=reader.errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        messages: list[tuple[str, str]] = []
        if reasoning is not None:
            messages.append(("self", reasoning))
        if content:
            messages.append(("user", content))
        for c in tool_calls:
            messages.append((c.name, atem_call(c)))
        if not messages:
            return ""
        # the prompt ends with `<|start|>assistant`: the first message starts at its recipient
        parts = [f"{'' if n == 0 else START + 'assistant'} to={to}{MESSAGE}{body}{EOT if n == len(messages) - 1 else EOM}"
                 for n, (to, body) in enumerate(messages)]
        return "".join(parts)


class MuseGlimmerParser(MuseParser):
    name = "muse_glimmer"
    vllm_names: ClassVar[tuple[str, ...]] = ("muse_glimmer",)
    families = ("Muse Glimmer",)
    model_patterns = (r"muse[-_ ]?glimmer",)
    # vLLM's example template for Glimmer names itself in its error message
    template_markers = ("MuseGlimmer ATEM",)
    priority = 1
    keep_schema_strings = False
    bare_header_is_reasoning = False


def _headers(text: str) -> list[re.Match[str]]:
    """Message headers: opened by `<|start|>assistant`, or where a message may begin (the reply's start, after
    an end marker); a `<|message|>` elsewhere (another format's header, `…json<|message|>`) is none."""
    found = []
    for match in _HEADER.finditer(text):
        before = text[:match.start()].rstrip()
        if match.group(0).startswith(START) or not before or before.endswith((EOM, EOT)):
            found.append(match)
    return found


def atem_call(call: ParsedCall) -> str:
    """One call as the template renders it: strings as written, other values as JSON."""
    try:
        args = json.loads(call.arguments)
    except ValueError:
        args = None
    params = "".join(
        f'<atem:parameter name="{k}">{v if isinstance(v, str) else dumps_arguments(v)}</atem:parameter>\n'
        for k, v in (args.items() if isinstance(args, dict) else []))
    return f'{CALLS_OPEN}\n<atem:invoke name="{call.name}">\n{params}{_INVOKE_CLOSE}\n{CALLS_CLOSE}'


class _Reader:
    def __init__(self, parser: MuseParser, tools: list[ToolSchema] | None, truncated: bool) -> None:
        self.parser = parser
        self.schemas = tool_schemas(tools)
        self.truncated = truncated
        self.reasoning: list[str] = []
        self.content: list[str] = []
        self.calls: list[ParsedCall] = []
        self.errors: list[str] = []

    def unframed(self, text: str) -> None:
        if _ANY_ATEM.search(text) is None:
            self.content.append(text)
            return
        self.content.append(self.tool_body(None, text, closed=not self.truncated, outside=True))

    def read(self, text: str) -> None:
        pos = 0
        headers = _headers(text)
        for n, head in enumerate(headers):
            if head.start() < pos:
                continue
            stray = text[pos:head.start()]
            if stray.strip():
                self.content.append(stray)
            limit = headers[n + 1].start() if n + 1 < len(headers) else len(text)
            end = _END.search(text, head.end(), limit)
            body_end = end.start() if end else limit
            body = text[head.end():body_end]
            cut = body.find(START)  # a next header that never reached its <|message|>
            if cut >= 0:
                body = body[:cut]
            pos = end.end() if end else limit
            closed = end is not None or n + 1 < len(headers)
            self.message(head.group(1), body, closed=closed or not self.truncated)
        tail = text[pos:]
        if tail.strip() and not re.fullmatch(r"\s*(?:<\|start\|>\s*(?:assistant)?[^<]*)?", tail):
            self.content.append(tail)

    def message(self, recipient: str | None, body: str, *, closed: bool) -> None:
        if recipient is None:
            (self.reasoning if self.parser.bare_header_is_reasoning else self.content).append(body)
        elif recipient == "self":
            self.reasoning.append(body)
        elif recipient in _CONTENT:
            self.content.append(body)
        elif recipient in _DROPPED:
            return
        else:
            left = self.tool_body(recipient, body, closed=closed, outside=False)
            if left.strip():
                self.content.append(left)

    def tool_body(self, recipient: str | None, body: str, *, closed: bool, outside: bool) -> str:
        """Read the invokes of one tool message (or of unframed text); returns the text left as content."""
        heads = list(_INVOKE_OPEN.finditer(body))
        if not heads:
            if outside:
                return body
            if not closed:
                self.errors.append(TRUNCATED)
                return ""
            self.errors.append(f"tool message to={recipient} without an <atem:invoke>: {body.strip()[:60]!r}")
            return body
        found = 0
        for n, head in enumerate(heads):
            limit = heads[n + 1].start() if n + 1 < len(heads) else len(body)
            close = body.find(_INVOKE_CLOSE, head.end(), limit)
            if close < 0:
                if not closed:
                    self.errors.append(TRUNCATED)
                else:
                    self.errors.append(f"<atem:invoke name={head.group(1)!r}> without {_INVOKE_CLOSE}: "
                                       "not read as a call")
                continue
            name = self.name(head.group(1).strip())
            if not name:
                self.errors.append("<atem:invoke> without a function name")
                continue
            self.calls.append(ParsedCall(name=name, arguments=dumps_arguments(self.arguments(name, body[head.end():close]))))
            found += 1
        if outside:  # unframed text: what is left once the invokes and their wrapper are taken out
            return re.sub(r"</?atem:function_calls>", "", _WHOLE_INVOKE.sub("", body)) if found else body
        return body if found == 0 and closed else ""

    def name(self, emitted: str) -> str:
        """`x.x` is the declared tool `x` (the template's recipient for a tool without a namespace)."""
        if not self.schemas or emitted in self.schemas:
            return emitted
        head, dot, tail = emitted.partition(".")
        return head if dot and head == tail and head in self.schemas else emitted

    def arguments(self, name: str, body: str) -> dict[str, Any]:
        props = self.schemas.get(name, {}).get("properties")
        props = props if isinstance(props, dict) else {}
        args: dict[str, Any] = {}
        for match in _PARAM.finditer(body):
            key, raw = match.group(1), match.group(2)
            if key in args:
                self.errors.append(f"call {name!r}: parameter {key!r} given twice; the last one is kept")
            args[key] = self.value(raw, props.get(key))
        unclosed = len(_PARAM_OPEN.findall(body)) - len(_PARAM.findall(body))
        if unclosed > 0:
            self.errors.append(f"call {name!r}: a parameter without </atem:parameter>")
        return args

    def value(self, raw: str, schema: Any) -> Any:
        try:
            decoded = json.loads(raw)
        except (ValueError, RecursionError):
            return raw
        if not self.parser.keep_schema_strings or not isinstance(schema, dict):
            return decoded
        types = schema.get("type")
        allowed = {types} if isinstance(types, str) else set(types) if isinstance(types, list) else set()
        if "string" not in allowed:
            return decoded
        return decoded if json_type(decoded) in allowed - {"string"} else raw
