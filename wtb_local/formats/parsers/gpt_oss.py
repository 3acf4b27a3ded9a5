"""gpt-oss (Harmony) replies: a sequence of messages, each `<|channel|>HEADER<|message|>BODY` + a
terminator (`<|end|>`, `<|call|>`, `<|return|>`), later ones opened by `<|start|>assistant`.

- `analysis` channel → reasoning; `final` channel and recipient-less `commentary` preambles → content;
- a header naming a recipient `to=functions.NAME` (on the commentary or, sometimes, the analysis channel;
  the recipient may also sit before `<|channel|>`) is a call whose body is the JSON arguments (kept as
  written); one call per message, parallel calls are several messages;
- stray header words between messages (`commentary`, `assistant` — seen in real output) are dropped,
  any other stray text is content;
- decoded with special tokens skipped, a reply reads `analysis…assistantfinal…`: that shape is split too.
"""

from __future__ import annotations

import re

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import TRUNCATED, decode_json_at, is_truncated, join_content
from wtb_local.formats.parsers.base import ToolParser

START, CHANNEL, MESSAGE = "<|start|>", "<|channel|>", "<|message|>"
_TERMINATORS = ("<|end|>", "<|call|>", "<|return|>")
_BODY_END = re.compile(r"<\|(?:end|call|return|start|channel)\|>")
_RECIPIENT = re.compile(r"to=([^\s<]+)")
_FILLER = re.compile(r"^\s*(?:<\|start\|>)?\s*(?:assistant|commentary|analysis|final)?\s*"
                     r"(?:<\|start\|>\s*assistant)?\s*$")
_TEXT_CALL = re.compile(r"to=functions\.([^\s<{]+)")
_TEXT_HEAD = re.compile(r"^\s*analysis(.*?)(?:assistant)?(?:commentary|analysis)?\s*$", re.DOTALL)
_TEXT_STRATEGY = re.compile(r"^\s*analysis(.*?)assistantfinal(.*)$", re.DOTALL)
REASONING_JOIN = "\n"  # between several analysis messages


def _recipient(header: str) -> str | None:
    m = _RECIPIENT.search(header)
    if m is None:
        return None
    target = m.group(1)
    return target.removeprefix("functions.")


def _parse_without_tokens(text: str, finish_reason: str | None) -> ParseResult:
    """A reply decoded with the special tokens skipped: `analysis…assistantfinal…`, or a call left as
    `…commentary to=functions.NAME json{…}` (arguments = the JSON after the recipient)."""
    call = _TEXT_CALL.search(text)
    if call is None:
        m = _TEXT_STRATEGY.match(text)
        if m:
            return ParseResult(reasoning=m.group(1).strip() or None, content=join_content([m.group(2)]))
        return ParseResult(content=join_content([text]))
    name = call.group(1)
    brace = text.find("{", call.end())
    decoded = decode_json_at(text, brace) if brace >= 0 else None
    head = _TEXT_HEAD.match(text[:call.start()])
    reasoning = (head.group(1).strip() or None) if head else None
    if decoded is None or not isinstance(decoded[0], dict):
        error = TRUNCATED if is_truncated(finish_reason) else f"arguments of {name} are not a JSON object"
        return ParseResult(reasoning=reasoning, errors=[error])
    return ParseResult(reasoning=reasoning, tool_calls=[ParsedCall(name=name, arguments=text[brace:decoded[1]])])


def parse_harmony(text: str, finish_reason: str | None) -> ParseResult:
    if CHANNEL not in text and MESSAGE not in text:
        return _parse_without_tokens(text, finish_reason)
    reasoning: list[str] = []
    content: list[str] = []
    calls: list[ParsedCall] = []
    errors: list[str] = []
    pos = 0
    while pos < len(text):
        ch = text.find(CHANNEL, pos)
        msg = text.find(MESSAGE, pos)
        if msg < 0:  # no more message bodies: trailing text, or a header the reply ended in
            tail = text[pos:ch] if ch >= 0 else text[pos:]
            if _recipient(text[pos:]) is not None:
                errors.append(TRUNCATED if is_truncated(finish_reason) else "tool call header without a message")
            elif not _FILLER.match(tail):
                content.append(tail)
            break
        header_start = ch if 0 <= ch < msg else msg
        stray = text[pos:header_start]
        header = text[header_start + len(CHANNEL):msg] if header_start == ch else ""
        pre_recipient = _recipient(stray)
        if pre_recipient is None and not _FILLER.match(stray):
            content.append(re.sub(r"<\|start\|>\s*assistant", "", stray))
        body_start = msg + len(MESSAGE)
        end = _BODY_END.search(text, body_start)
        body = text[body_start:end.start() if end else len(text)]
        terminated = end is not None and end.group(0) in _TERMINATORS
        pos = end.end() if end is not None and terminated else end.start() if end else len(text)
        channel = header.strip().split(" ", 1)[0].split("<|", 1)[0] if header.strip() else ""
        name = _recipient(header)
        name = pre_recipient if name is None else name
        if name is not None:
            if not terminated and is_truncated(finish_reason):
                errors.append(TRUNCATED)
                continue
            if not name:
                errors.append("tool call without a function name")
                continue
            raw = body.strip()
            decoded = decode_json_at(raw, 0)
            if decoded is None or not isinstance(decoded[0], dict):
                errors.append(f"arguments of {name} are not a JSON object")
                calls.append(ParsedCall(name=name, arguments=raw))
            else:
                calls.append(ParsedCall(name=name, arguments=raw[:decoded[1]]))
        elif channel == "analysis":
            reasoning.append(body.strip())
        else:
            content.append(body)
    joined = REASONING_JOIN.join(r for r in reasoning if r)
    return ParseResult(reasoning=joined or None, content=join_content(content), tool_calls=calls, errors=errors)


class GptOssParser(ToolParser):
    name = "gpt_oss"
    vllm_names = ("openai",)
    families = ("gpt-oss",)
    model_patterns = (r"gpt-oss",)
    template_markers = ("<|channel|>",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        return parse_harmony(text, finish_reason)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        # The prompt ends with `<|start|>assistant`; every later message opens its own header.
        messages = []
        if reasoning:
            messages.append(f"{CHANNEL}analysis{MESSAGE}{reasoning}<|end|>")
        if content and tool_calls:
            messages.append(f"{CHANNEL}commentary{MESSAGE}{content}<|end|>")
        for c in tool_calls:
            messages.append(f"{CHANNEL}commentary to=functions.{c.name} <|constrain|>json{MESSAGE}{c.arguments}<|call|>")
        if content and not tool_calls:
            messages.append(f"{CHANNEL}final{MESSAGE}{content}<|return|>")
        return f"{START}assistant".join(messages)
