"""Gemma 4 tool calls:

    <|channel>thought
    reasoning<channel|><|tool_call>call:NAME{key:<|"|>text<|"|>,n:3,flag:true}<tool_call|>

Arguments are Gemma's own object syntax (`_gemma_calls`): keys bare, strings between `<|"|>` tokens,
numbers/booleans/null bare, so values keep the types the model wrote (no schema retyping). Parallel calls
are concatenated blocks. Reasoning is every `<|channel>thought ...<channel|>` block (the template strips
them all from history); an empty one is the thinking-off idiom of the generation prompt. Read leniently,
as Gemma 4 writes in the wild: a call closed by `<turn|>` (the end of the turn, so the block is
unterminated: kept with an error), `call:NAME{...}` without the `<|tool_call>` token at the start of the
reply or of a line (after the reasoning block), `<|tool_call>:call:` and `<|tool_call>:NAME{` openers,
`<call>NAME{...}`; a call with parenthesised or `key=value` arguments is read and reported. A call that
cannot be read keeps its raw arguments text with an error; the text after it is read on.
"""

from __future__ import annotations

import re

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.end_of_turn import strip_end_of_turn
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    arguments_object,
    dumps_arguments,
    is_truncated,
    join_content,
)
from wtb_local.formats.parsers._gemma_calls import GemmaArgs, Unreadable
from wtb_local.formats.parsers.base import ToolParser

CALL_OPEN, CALL_CLOSE = "<|tool_call>", "<tool_call|>"
CHANNEL_OPEN, CHANNEL_CLOSE = "<|channel>", "<channel|>"
ARGS = GemmaArgs(delimiters=('<|"|>',))

# A call start: the wrapper token (with the stray colon forms seen in the wild), the fragmented `<call>`
# form, or a bare `call:` at the start of the text or of a line.
_START = re.compile(r"<\|tool_call>\s*:?\s*(?:call:)?|<call>\s*(?:call:)?|(?:^|(?<=\n))[ \t]*call:(?=[A-Za-z_])")
# The channel name after `<|channel>` ("thought"), and the same as a completion's first line when the
# prompt pre-filled `<|channel>` (the name is then the completion's first word).
_CHANNEL_NAME = re.compile(r"\A\s*thought\b[ \t]*\n?")
_CHANNEL_NAME_LINE = re.compile(r"\A\s*thought[ \t]*\n")


def split_channels(text: str, thinking: bool | None) -> tuple[str | None, str]:
    """(reasoning, the text outside reasoning blocks) of a Gemma completion.

    `thinking=True`: the prompt pre-filled `<|channel>`, so the text starts inside a block. Otherwise a
    block is `<|channel>...<channel|>`; a closer seen before any opener means the text started inside one.
    An unclosed block ends at the first call token, else at the end (cut off while thinking)."""
    parts: list[str] = []
    pieces: list[str] = []
    pos = 0
    first_close, first_open = text.find(CHANNEL_CLOSE), text.find(CHANNEL_OPEN)
    starts_inside = thinking is True and not text.lstrip().startswith(CHANNEL_OPEN)
    if thinking is None and first_close >= 0 and (first_open < 0 or first_close < first_open):
        starts_inside = True
    if starts_inside:
        body, pos = _block_body(text, 0)
        parts.append(_CHANNEL_NAME_LINE.sub("", body, count=1))
    while True:
        start = text.find(CHANNEL_OPEN, pos)
        if start < 0:
            pieces.append(text[pos:])
            break
        pieces.append(text[pos:start])
        body, pos = _block_body(text, start + len(CHANNEL_OPEN))
        parts.append(_CHANNEL_NAME.sub("", body, count=1))
    kept = [p.strip() for p in parts if p.strip()]
    rest = "".join(pieces).replace(CHANNEL_CLOSE, "")  # a stray closer is markup, not text
    return ("\n".join(kept) or None), rest


def _block_body(text: str, start: int) -> tuple[str, int]:
    close = text.find(CHANNEL_CLOSE, start)
    if close >= 0:
        return text[start:close], close + len(CHANNEL_CLOSE)
    call = text.find(CALL_OPEN, start)
    return (text[start:call], call) if call >= 0 else (text[start:], len(text))


def read_calls(text: str, finish_reason: str | None) -> tuple[list[str], list[ParsedCall], list[str]]:
    """(content pieces, calls, errors) of Gemma 4 text with the reasoning already split off."""
    pieces: list[str] = []
    calls: list[ParsedCall] = []
    errors: list[str] = []
    pos = 0
    while True:
        found = _START.search(text, pos)
        if found is None:
            pieces.append(text[pos:])
            break
        wrapped = found.group(0).lstrip().startswith((CALL_OPEN, "<call>"))
        if not wrapped and not _ATTEMPT.match(text, found.end()):
            pieces.append(text[pos:found.end()])  # `call:` in prose, not followed by NAME{
            pos = found.end()
            continue
        pieces.append(text[pos:found.start()])
        pos = found.end()
        while True:  # the calls of one wrapper (one, unless the model put several inside it)
            try:
                read = ARGS.read_call(text, pos)
            except Unreadable as exc:
                pos = _broken(text, found.start(), pos, exc, finish_reason, calls, errors, pieces)
                break
            calls.append(ParsedCall(name=read.name, arguments=dumps_arguments(read.arguments)))
            errors += [e if e.startswith("call ") else f"call {read.name}: {e}" for e in read.errors]
            pos = after = _skip(text, read.end)
            if text.startswith(CALL_CLOSE, after):
                pos = after + len(CALL_CLOSE)
            elif wrapped and text.startswith("call:", after):
                pos = after + len("call:")
                continue
            elif wrapped and found.group(0).lstrip().startswith(CALL_OPEN):
                errors.append(f"call {read.name}: no {CALL_CLOSE} after the call (an unterminated block); "
                              "call kept")
            break
    return pieces, calls, errors


_ATTEMPT = re.compile(r"[A-Za-z_][\w.\-]*\s*[{(]")


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _broken(text: str, start: int, at: int, exc: Unreadable, finish_reason: str | None,
            calls: list[ParsedCall], errors: list[str], pieces: list[str]) -> int:
    """Record a call starting at `start` (its name at `at`) that cannot be read; returns where reading
    goes on: after its closing token, else at the next call token, else at the end."""
    name = re.match(r"[A-Za-z_][\w.\-]*", text[at:])
    nxt, close = text.find(CALL_OPEN, at), text.find(CALL_CLOSE, at)
    end = min((p for p in (nxt, close) if p >= 0), default=len(text))
    if exc.cut and end == len(text) and is_truncated(finish_reason):
        errors.append(f"{TRUNCATED}: call cut off at the token limit")
        return len(text)
    if name is None:
        errors.append(f"tool call without a function name: {text[start:end][:60]!r}")
        pieces.append(text[start:end])
    else:
        raw = text[at + name.end():end].strip()
        calls.append(ParsedCall(name=name.group(0), arguments=raw))
        errors.append(f"call {name.group(0)}: arguments cannot be read ({exc}); kept as raw text")
    return end + len(CALL_CLOSE) if end == close else end


class Gemma4Parser(ToolParser):
    name = "gemma4"
    vllm_names = ("gemma4",)
    families = ("Gemma 4 (E2B, E4B, 12B, 26B-A4B, 31B)",)
    model_patterns = (r"gemma-?4",)
    template_markers = ("<|tool_call>call:",)

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_of_turn(text or "")
        reasoning, rest = split_channels(text, self.options.get("thinking"))
        pieces, calls, errors = read_calls(rest, finish_reason)
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"{CHANNEL_OPEN}thought\n{reasoning}{CHANNEL_CLOSE}" if reasoning else ""
        blocks = []
        for c in tool_calls:
            args = arguments_object(c.arguments)
            body = ARGS.write_value(args) if args is not None else "{" + c.arguments + "}"
            blocks.append(f"{CALL_OPEN}call:{c.name}{body}{CALL_CLOSE}")
        return head + (content or "") + "".join(blocks)
