"""MBZUAI IFM K2 Horizon replies: `<ifm|...>` tags, calls in one of three forms a template argument chooses.

    <ifm|think>reasoning</ifm|think>                   (reasoning_effort medium: think_fast, low: think_faster)
    <ifm|tool_calls><ifm|tool_call>NAME<ifm|arg_key>K</ifm|arg_key><ifm|arg_value>V</ifm|arg_value></ifm|tool_call>
    <ifm|tool_call>…</ifm|tool_call></ifm|tool_calls>

`tool_call_format` (`chat_template_kwargs`; the parser option of the same name): `xml` (the template's
default), `xml_typed` (`<ifm|arg_type>T</ifm|arg_type>` between key and value) or `json` (`{"name": …,
"arguments": {…}}` inside `<ifm|tool_call>`). With the option given, a call in another form is not read
(as vLLM, which fails closed): the step gets an error naming the form and the text stays content. Without
it each call's form is read from the text (as SGLang does), so a run that never said which form it asked
for reads every one. A call written without the `<ifm|tool_calls>` group is read too.

Values: an XML value is typed by its `<ifm|arg_type>` where given (within the schema's types when the
schema allows several), else by the tool's schema; a string keeps its whitespace. A JSON call's string value
is retyped only where the schema does not admit a string (`"true"` for a boolean). A call whose tags cannot
be read (an arg_key without its value, text between the tags) is an error, not a call; when no call of a
block can be read the block stays in the content as written.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    arguments_object,
    coerce_value,
    decode_json_at,
    dumps_arguments,
    is_truncated,
    join_content,
    json_type,
    schema_types,
    split_reasoning,
    tool_schemas,
)
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens

GROUP_OPEN, GROUP_CLOSE = "<ifm|tool_calls>", "</ifm|tool_calls>"
CALL_OPEN, CALL_CLOSE = "<ifm|tool_call>", "</ifm|tool_call>"
KEY_OPEN, KEY_CLOSE = "<ifm|arg_key>", "</ifm|arg_key>"
TYPE_OPEN, TYPE_CLOSE = "<ifm|arg_type>", "</ifm|arg_type>"
VALUE_OPEN, VALUE_CLOSE = "<ifm|arg_value>", "</ifm|arg_value>"
THINK_TAGS = {"high": ("<ifm|think>", "</ifm|think>"), "medium": ("<ifm|think_fast>", "</ifm|think_fast>"),
              "low": ("<ifm|think_faster>", "</ifm|think_faster>")}
FORMS = ("xml", "xml_typed", "json")
_ARG = re.compile(re.escape(KEY_OPEN) + r"(.*?)" + re.escape(KEY_CLOSE) + r"\s*(?:" + re.escape(TYPE_OPEN)
                  + r"(.*?)" + re.escape(TYPE_CLOSE) + r"\s*)?" + re.escape(VALUE_OPEN) + r"(.*?)"
                  + re.escape(VALUE_CLOSE), re.DOTALL)
_ARG_TAGS = (KEY_OPEN, KEY_CLOSE, TYPE_OPEN, TYPE_CLOSE, VALUE_OPEN, VALUE_CLOSE)
_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "dict": "object",
          "list": "array"}


class K2HorizonParser(ToolParser):
    name = "k2_horizon"
    vllm_names: ClassVar[tuple[str, ...]] = ("k2_horizon",)
    families = ("K2 Horizon",)
    model_patterns = (r"k2-horizon", r"k2_horizon")
    template_markers = ("<ifm|tool_call>",)
    # chat-template kwargs a run passes on as options of the same name (run/setup/parser_choice.py)
    template_options: ClassVar[tuple[str, ...]] = ("tool_call_format", "reasoning_effort")

    def _form(self) -> str | None:
        form = self.options.get("tool_call_format")
        return form if form in FORMS else None

    def _think_tags(self, text: str) -> tuple[str, str]:
        effort = self.options.get("reasoning_effort")
        if effort in THINK_TAGS:
            return THINK_TAGS[effort]
        # no effort given: the block the text opens or closes (longest tag names first)
        for name in ("low", "medium", "high"):
            if THINK_TAGS[name][1] in text or text.lstrip().startswith(THINK_TAGS[name][0]):
                return THINK_TAGS[name]
        return THINK_TAGS["high"]

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "")
        open_tag, close_tag = self._think_tags(text)
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"), open_tag=open_tag,
                                          close_tag=close_tag, call_markers=(GROUP_OPEN, CALL_OPEN))
        reader = _Reader(self._form(), tools, is_truncated(finish_reason))
        pieces = reader.read(rest)
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=reader.calls,
                           errors=reader.errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        open_tag, close_tag = THINK_TAGS.get(self.options.get("reasoning_effort") or "high", THINK_TAGS["high"])
        head = f"{open_tag}{reasoning}{close_tag}\n" if reasoning is not None else ""
        if not tool_calls:
            return head + (content or "")
        form = self._form() or "xml"
        calls = "\n".join(CALL_OPEN + _call_text(c, form) + CALL_CLOSE for c in tool_calls)
        return head + (content or "") + GROUP_OPEN + calls + GROUP_CLOSE


def _call_text(call: ParsedCall, form: str) -> str:
    args = arguments_object(call.arguments)
    if form == "json":
        return json.dumps({"name": call.name, "arguments": args if args is not None else {}}, ensure_ascii=False)
    parts = [call.name]
    for key, value in (args or {}).items():
        typed = f"{TYPE_OPEN}{json_type(value)}{TYPE_CLOSE}" if form == "xml_typed" else ""
        text = value if isinstance(value, str) else dumps_arguments(value)
        parts.append(f"{KEY_OPEN}{key}{KEY_CLOSE}{typed}{VALUE_OPEN}{text}{VALUE_CLOSE}")
    return "".join(parts)


class _Reader:
    def __init__(self, form: str | None, tools: list[ToolSchema] | None, truncated: bool) -> None:
        self.form = form
        self.schemas = tool_schemas(tools)
        self.truncated = truncated
        self.calls: list[ParsedCall] = []
        self.errors: list[str] = []

    def read(self, text: str) -> list[str]:
        """The content pieces of `text`; calls and errors collected on the reader."""
        pieces: list[str] = []
        pos = 0
        while True:
            group = text.find(GROUP_OPEN, pos)
            bare = text.find(CALL_OPEN, pos)
            if group < 0 and bare < 0:
                pieces.append(text[pos:])
                return pieces
            if group >= 0 and (bare < 0 or group < bare):
                pieces.append(text[pos:group])
                close = text.find(GROUP_CLOSE, group)
                end = close + len(GROUP_CLOSE) if close >= 0 else len(text)
                inner = text[group + len(GROUP_OPEN):close if close >= 0 else len(text)]
                found, stop = self.block(inner, closed=close >= 0)
                if not found and not stop:
                    pieces.append(text[group:end])  # nothing readable: the block stays as written
                elif found and close < 0 and not stop:
                    self.errors.append(f"no {GROUP_CLOSE} (an unterminated block); calls kept")
                pos = end
            else:  # a call written without its group
                pieces.append(text[pos:bare])
                close = text.find(CALL_CLOSE, bare)
                end = close + len(CALL_CLOSE) if close >= 0 else len(text)
                found, stop = self.block(text[bare:end], closed=close >= 0)
                if not found and not stop:
                    pieces.append(text[bare:end])
                pos = end

    def block(self, inner: str, *, closed: bool) -> tuple[int, bool]:
        """Read the calls of one block's inside: (calls read, cut at the token limit)."""
        found = 0
        pos = 0
        starts = [m.start() for m in re.finditer(re.escape(CALL_OPEN), inner)]
        if not starts:
            if self.truncated and not closed:
                self.errors.append(TRUNCATED)
                return 0, True
            self.errors.append(f"{GROUP_OPEN} block without a {CALL_OPEN}: {inner.strip()[:60]!r}")
            return 0, False
        for n, start in enumerate(starts):
            if inner[pos:start].strip():
                self.errors.append(f"text between calls: {inner[pos:start].strip()[:60]!r}")
            limit = starts[n + 1] if n + 1 < len(starts) else len(inner)
            close = inner.find(CALL_CLOSE, start, limit)
            if close < 0:
                if self.truncated and n == len(starts) - 1:
                    self.errors.append(TRUNCATED)
                    return found, True
                self.errors.append(f"{CALL_OPEN} without {CALL_CLOSE}: not read as a call")
                pos = limit
                continue
            call = self.call(inner[start + len(CALL_OPEN):close])
            if call is not None:
                self.calls.append(call)
                found += 1
            pos = close + len(CALL_CLOSE)
        if inner[pos:].strip():
            self.errors.append(f"text after the calls: {inner[pos:].strip()[:60]!r}")
        return found, False

    def call(self, body: str) -> ParsedCall | None:
        form = "json" if body.lstrip().startswith("{") else "xml_typed" if TYPE_OPEN in body else "xml"
        if self.form is not None and form != self.form and not (self.form == "xml_typed" and form == "xml"
                                                                and KEY_OPEN not in body):
            self.errors.append(f"a call in the {form} form where the template asked for {self.form}: "
                               "not read as a call")
            return None
        return self.json_call(body) if form == "json" else self.xml_call(body)

    def json_call(self, body: str) -> ParsedCall | None:
        decoded = decode_json_at(body, 0)
        if decoded is None or body[decoded[1]:].strip():
            self.errors.append(f"a JSON call that is not one JSON object: {body.strip()[:60]!r}")
            return None
        value = decoded[0]
        name = value.get("name") if isinstance(value, dict) else None
        if not isinstance(name, str) or not name.strip():
            self.errors.append(f"a JSON call without a name: {body.strip()[:60]!r}")
            return None
        args = value.get("arguments", {})
        if not isinstance(args, dict):
            self.errors.append(f"arguments of {name} are not a JSON object; kept as raw text")
            return ParsedCall(name=name, arguments=json.dumps(args, ensure_ascii=False))
        props = self.schemas.get(name, {}).get("properties")
        props = props if isinstance(props, dict) else {}
        typed = {k: _retype_json(v, props.get(k)) for k, v in args.items()}
        if typed == args:  # as written
            start = body.find("{", body.find('"arguments"')) if '"arguments"' in body else -1
            span = decode_json_at(body, start) if start >= 0 else None
            if span is not None and span[0] == args:
                return ParsedCall(name=name, arguments=body[start:span[1]].strip())
        return ParsedCall(name=name, arguments=dumps_arguments(typed))

    def xml_call(self, body: str) -> ParsedCall | None:
        first = body.find(KEY_OPEN)
        head = body if first < 0 else body[:first]
        name = head.strip()
        if not name or any(tag in head for tag in _ARG_TAGS):
            self.errors.append(f"a call without a function name: {body.strip()[:60]!r}")
            return None
        if first < 0:
            return ParsedCall(name=name, arguments="{}")
        props = self.schemas.get(name, {}).get("properties")
        props = props if isinstance(props, dict) else {}
        args: dict[str, Any] = {}
        pos = first
        for match in _ARG.finditer(body, first):
            if body[pos:match.start()].strip():
                break
            key = match.group(1).strip()
            if key in args:
                self.errors.append(f"call {name!r}: argument {key!r} given twice; the last one is kept")
            args[key] = _xml_value(match.group(3), props.get(key), match.group(2))
            pos = match.end()
        if pos == first or body[pos:].strip():
            self.errors.append(f"call {name!r}: unreadable argument tags {body[pos:].strip()[:60]!r}; "
                               "not read as a call")
            return None
        return ParsedCall(name=name, arguments=dumps_arguments(args))


def _xml_value(raw: str, schema: Any, explicit: str | None) -> Any:
    schema = schema if isinstance(schema, dict) else None
    kind = (explicit or "").split("[", 1)[0].strip().lower()
    kind = _TYPES.get(kind, kind)
    if kind and kind != "any":
        allowed = schema_types(schema)
        if not allowed or kind in allowed or (kind == "integer" and "number" in allowed):
            schema = {"type": kind}
    elif kind == "any":
        return raw
    types = schema_types(schema)
    return coerce_value(raw if "string" in types or not types else raw.strip(), schema)


def _retype_json(value: Any, schema: Any) -> Any:
    if not isinstance(value, str) or not isinstance(schema, dict):
        return value
    types = schema_types(schema)
    if not types or "string" in types:
        return value
    return coerce_value(value, schema)
