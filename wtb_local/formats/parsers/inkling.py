"""Thinking Machines Inkling replies: typed blocks opened by content-kind tokens.

    <|content_thinking|>reasoning<|end_message|>           (the prompt ends with `<|message_model|>`)
    <|message_model|><|content_text|>visible text<|end_message|>
    <|message_model|>NAME<|content_invoke_tool_json|>{"name": "NAME", "args": {…}}<|end_message|>

Blocks repeat in any order; `<|end_message|>` or `<|content_model_end_sampling|>` ends one. Text between a
message opener (or the start of the reply) and a content-kind token is the message's name header: markup,
not content. Text with no kind token is content (a header never followed by a kind token is such text).
`<|content_invoke_tool_text|>` (free-text tool input) and `<|content_tool_error|>` blocks are visible text,
as vLLM reads them (SGLang makes the first a call with an empty name, which no tool can answer). A kind
token written inside a text block is markup. A call payload is one JSON object whose arguments are under
`args` (`arguments`, `parameters` read too), kept as written; a payload that is not JSON only because the
model wrote `&quot;` for a quote (a known sampling fault of the model) is read with the entity unescaped;
any other broken payload keeps its name and raw arguments, with an error. Options: `thinking` (True: the
prompt pre-filled `<|content_thinking|>`, so the reply starts inside the reasoning block).
"""

from __future__ import annotations

import json
import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    decode_json_at,
    is_truncated,
    join_content,
    object_member_spans,
)
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens

MESSAGE_MODEL = "<|message_model|>"
TEXT = "<|content_text|>"
THINKING = "<|content_thinking|>"
TOOL_JSON = "<|content_invoke_tool_json|>"
TOOL_TEXT = "<|content_invoke_tool_text|>"
TOOL_ERROR = "<|content_tool_error|>"
END_SAMPLING = "<|content_model_end_sampling|>"
END_MESSAGE = "<|end_message|>"
_KINDS = (TEXT, THINKING, TOOL_JSON, TOOL_TEXT, TOOL_ERROR)
_ENDS = (END_MESSAGE, END_SAMPLING)
_TOKEN = re.compile("|".join(re.escape(t) for t in (MESSAGE_MODEL, *_KINDS, *_ENDS)))
_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARGS_KEYS = ("args", "arguments", "parameters")


class InklingParser(ToolParser):
    name = "inkling"
    vllm_names: ClassVar[tuple[str, ...]] = ("inkling",)
    families = ("Inkling", "Inkling-Small")
    model_patterns = (r"thinkingmachines/inkling", r"(^|/)inkling")
    template_markers = (TOOL_JSON,)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "", (*_ENDS, MESSAGE_MODEL))
        reasoning: list[str] = []
        content: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        # the block the reply starts in: a header after the prompt's `<|message_model|>`, or the
        # reasoning block the prompt opened
        state = "thinking" if self.options.get("thinking") is True else "header"
        pos = 0
        tokens = list(_TOKEN.finditer(text))
        for n, token in enumerate(tokens):
            if token.start() < pos:
                continue
            piece = text[pos:token.start()]
            tok = token.group(0)
            if state == "header":
                # a header is the text right before a kind token; before anything else it is a message body
                if tok not in _KINDS and piece.strip():
                    content.append(piece)
            elif state == "thinking":
                reasoning.append(piece)
                if tok == THINKING:  # repeated: markup
                    pos = token.end()
                    continue
            else:  # visible text
                content.append(piece)
                if tok in (TEXT, TOOL_TEXT, TOOL_ERROR):  # a kind token inside a text block is markup
                    pos = token.end()
                    continue
            pos = token.end()
            if tok == MESSAGE_MODEL or tok in _ENDS:
                state = "header"
            elif tok == THINKING:
                state = "thinking"
            elif tok == TOOL_JSON:
                end = next((t for t in tokens[n + 1:] if t.group(0) in _ENDS or t.group(0) == MESSAGE_MODEL),
                           None)
                payload = text[pos:end.start() if end else len(text)]
                call = _payload(payload, closed=end is not None or not is_truncated(finish_reason), errors=errors)
                if call is not None:
                    calls.append(call)
                pos = end.end() if end else len(text)
                state = "header"
            else:
                state = "text"
        tail = text[pos:]
        (reasoning if state == "thinking" else content).append(tail)
        return ParseResult(reasoning=join_content(reasoning), content=join_content(content), tool_calls=calls,
                           errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        blocks = []
        if reasoning is not None:
            blocks.append(f"{THINKING}{reasoning}{END_MESSAGE}")
        if content:
            blocks.append(f"{TEXT}{content}{END_MESSAGE}")
        for c in tool_calls:
            blocks.append(f'{c.name}{TOOL_JSON}{{"name": {json.dumps(c.name, ensure_ascii=False)}, '
                          f'"args": {c.arguments}}}{END_MESSAGE}')
        return MESSAGE_MODEL.join(blocks)


def _payload(payload: str, *, closed: bool, errors: list[str]) -> ParsedCall | None:
    """The call of one `<|content_invoke_tool_json|>` block."""
    raw = payload.strip()
    if not closed:
        errors.append(TRUNCATED)
        return None
    call = _json_call(raw)
    if call is None and "&quot;" in raw:
        call = _json_call(raw.replace("&quot;", '"'))
    if call is not None:
        return call
    name = _NAME.search(raw)
    if name is None:
        errors.append(f"a tool block that is not a JSON call: {raw[:60]!r}")
        return None
    key = re.search(r'"(?:args|arguments|parameters)"\s*:\s*', raw)
    args = raw[key.end():].rstrip().removesuffix("}").rstrip() if key else "{}"
    errors.append(f"the call to {name.group(1)} is not valid JSON; arguments kept as raw text")
    return ParsedCall(name=name.group(1), arguments=args)


def _json_call(raw: str) -> ParsedCall | None:
    decoded = decode_json_at(raw, 0)
    if decoded is None or raw[decoded[1]:].strip() or not isinstance(decoded[0], dict):
        return None
    value = decoded[0]
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    key = next((k for k in _ARGS_KEYS if k in value), None)
    if key is None:
        return ParsedCall(name=name, arguments="{}")
    args = value[key]
    if isinstance(args, str):
        return ParsedCall(name=name, arguments=args)
    spans = object_member_spans(raw, 0) or {}
    text = raw[spans[key][0]:spans[key][1]] if key in spans else json.dumps(args, ensure_ascii=False)
    return ParsedCall(name=name, arguments=text)
