"""Reading marker-introduced JSON call lists/objects, keeping each call's arguments text as written.

Shared by the families that put `{"name", "arguments"}` objects (or a list of them) after a marker:
Mistral pre-v11, Granite 3.x, Phi-4-mini and Hunyuan (a list), granite-20b-fc and GigaChat3 (one object). Built on `_common`'s exact-span helpers; what it
adds is recovery: one broken item never drops the good ones, and a broken item keeps its name with the
raw arguments text (spec: a reply that attempts a call must not come back as plain content).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from wtb_local.contract.schema import ParsedCall
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    arguments_object,
    call_from_json_object,
    decode_json_at,
    find_closing,
    skip_ws,
)

_NAME_RE = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARGS_KEY_RE = re.compile(r'"(?:arguments|parameters)"\s*:\s*')


@dataclass
class CallScan:
    """What a scan found: the calls, errors, where the scanned value ended, and whether it was closed."""

    calls: list[ParsedCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    end: int = 0
    complete: bool = True  # False when the text ended before the list/object closed (cut-off output)
    partial: ParsedCall | None = None  # the unclosed last call, salvaged (callers drop it when cut off)

    def finish(self, truncated: bool) -> tuple[list[ParsedCall], list[str]]:
        """Calls and errors under the cut-off policy: a call the token limit cut is an error, never kept
        half-written; an unclosed call in a reply that stopped normally keeps its raw text."""
        if self.complete:
            return self.calls, self.errors
        if truncated:
            return self.calls, [*self.errors, TRUNCATED]
        calls = [*self.calls, self.partial] if self.partial is not None else self.calls
        return calls, [*self.errors, "unclosed tool call"]


def salvage_call(fragment: str, closed: bool) -> ParsedCall | None:
    """Best effort for a call object that does not decode: its name and the raw arguments text.

    `closed`: the fragment ends with the `}` of the call object (not part of the arguments text)."""
    m = _NAME_RE.search(fragment)
    if m is None:
        return None
    try:
        name = json.loads(f'"{m.group(1)}"')
    except ValueError:
        name = m.group(1)
    if not name.strip():
        return None
    a = _ARGS_KEY_RE.search(fragment)
    if a is None:
        return ParsedCall(name=name, arguments="")
    raw = fragment[a.end():].rstrip()
    if closed and raw.endswith("}"):
        raw = raw[:-1].rstrip()
    return ParsedCall(name=name, arguments=raw)


def scan_object(text: str, i: int) -> CallScan:
    """The call object whose `{` is at `text[i]`."""
    closing = find_closing(text, i)
    decoded = decode_json_at(text, i)
    if decoded is None:
        end = closing if closing > 0 else len(text)
        scan = CallScan(end=end, complete=closing > 0)
        call = salvage_call(text[i:end], closing > 0)
        if closing < 0:
            scan.partial = call  # the finish() policy reports it
            return scan
        if call is not None:
            scan.calls.append(call)
        scan.errors.append(f"tool call is not valid JSON: {text[i:end][:60]!r}")
        return scan
    value, end = decoded
    scan = CallScan(end=end)
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        scan.errors.append(f"tool call without a name: {text[i:end][:60]!r}")
        return scan
    call = call_from_json_object(text, i, value) or ParsedCall(name=value["name"], arguments="{}")
    scan.calls.append(call)
    if arguments_object(call.arguments) is None:
        scan.errors.append(f"arguments of {call.name} are not a JSON object")
    return scan


def scan_call_list(text: str, i: int) -> CallScan:
    """The JSON list of call objects whose `[` is at `text[i]`."""
    scan = CallScan(end=i)
    j = skip_ws(text, i + 1)
    while j < len(text):
        if text[j] == "]":
            scan.end = j + 1
            return scan
        if text[j] != "{":
            scan.errors.append(f"unexpected {text[j]!r} in the tool call list")
            closing = find_closing(text, i)
            scan.complete = closing > 0
            scan.end = closing if closing > 0 else len(text)
            return scan
        item = scan_object(text, j)
        scan.calls.extend(item.calls)
        scan.errors.extend(item.errors)
        if not item.complete:
            scan.partial = item.partial
            break
        j = skip_ws(text, item.end)
        if j < len(text) and text[j] == ",":
            j = skip_ws(text, j + 1)
    scan.complete = False
    scan.end = len(text)
    return scan


def scan_calls(text: str, i: int) -> CallScan:
    """A list of calls or a single call object at `text[i]` (after skipping whitespace)."""
    j = skip_ws(text, i)
    if j < len(text) and text[j] == "[":
        return scan_call_list(text, j)
    if j < len(text) and text[j] == "{":
        return scan_object(text, j)
    return CallScan(end=j, complete=j < len(text), errors=["no JSON tool call after the call marker"])


def parse_marked_calls(text: str, marker: re.Pattern[str], finish_reason: str | None, *,
                       close_tag: str | None = None,
                       close_required: bool = False) -> tuple[list[str], list[ParsedCall], list[str]]:
    """(content pieces, calls, errors) of a text where each `marker` is followed by a JSON call list (or
    one call object), optionally closed by `close_tag`; with `close_required`, calls read from a block the
    tag never closes carry an error. An empty list is not a call: its text stays content."""
    pieces: list[str] = []
    calls: list[ParsedCall] = []
    errors: list[str] = []
    found = list(marker.finditer(text))
    pos = 0
    for n, m in enumerate(found):
        if m.start() < pos:
            continue
        scan = scan_calls(text, m.end())
        got, errs = scan.finish(finish_reason == "length" and n == len(found) - 1)
        if got and text[skip_ws(text, m.end())] == "{":  # readable, but these formats write a list
            errs = [*errs, f"a bare call object instead of a list after {m.group(0)!r}"]
        if not got and not errs:  # e.g. `functools[]`: nothing was called
            continue
        pieces.append(text[pos:m.start()])
        calls += got
        errors += errs
        if not got and not scan.calls and scan.partial is None:
            pieces.append(text[m.start():scan.end])  # unreadable: keep the text for analysis
        pos = scan.end
        if close_tag:
            after = skip_ws(text, pos)
            if text.startswith(close_tag, after):
                pos = after + len(close_tag)
            elif close_required and got:
                errors.append(f"no {close_tag} after the calls (an unterminated block); calls kept")
    pieces.append(text[pos:])
    return pieces, calls, errors


def parse_marked_objects(text: str, marker: re.Pattern[str], truncated: bool,
                         unread: Callable[[re.Match[str]], str]) -> tuple[list[str], list[ParsedCall], list[str]]:
    """(content pieces, calls, errors) of a text where each `marker` is followed by one JSON call object and no
    closing tag. A marker with no object after it is an error (`unread(marker)` words it) and its text stays
    content; one at the very end of a reply cut at the token limit is a truncated call."""
    pieces: list[str] = []
    calls: list[ParsedCall] = []
    errors: list[str] = []
    found = list(marker.finditer(text))
    pos = 0
    for n, m in enumerate(found):
        if m.start() < pos:
            continue
        pieces.append(text[pos:m.start()])
        start = skip_ws(text, m.end())
        if start >= len(text) or text[start] != "{":
            if start >= len(text) and truncated:
                errors.append(TRUNCATED)
            else:
                errors.append(unread(m))
                pieces.append(text[m.start():start])
            pos = start
            continue
        scan = scan_object(text, start)
        got, errs = scan.finish(truncated and n == len(found) - 1)
        calls += got
        errors += errs
        if not got and not scan.calls and scan.partial is None and errs[-1:] != [TRUNCATED]:
            pieces.append(text[m.start():scan.end])
        pos = scan.end
    pieces.append(text[pos:])
    return pieces, calls, errors
