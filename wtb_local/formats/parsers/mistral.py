"""Mistral tool calls, both tokenizer generations.

- pre-v11 (Mistral-7B-v0.3, Mixtral, Nemo, Small ≤ 3.1): `[TOOL_CALLS]` + a JSON list of
  `{"name", "arguments", "id"?}` objects;
- v11+ (Small-3.2, Magistral, Devstral): `[TOOL_CALLS]NAME[CALL_ID]id[ARGS]{json}` per call, repeated
  for parallel calls (`[CALL_ID]` is optional; `[ARGS]` is missing when special tokens were skipped).
Both are read by one parser; the two classes differ only in the text `format` writes. Ids are the
9-alphanumeric kind the templates enforce; when the model wrote one it is kept. Magistral reasons in
`[THINK]…[/THINK]`.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    decode_json_at,
    is_truncated,
    join_content,
    skip_ws,
    split_reasoning,
)
from wtb_local.formats.parsers._json_calls import scan_calls
from wtb_local.formats.parsers.base import ToolParser

TOOL_CALLS = "[TOOL_CALLS]"
_V11_HEAD = re.compile(r"\s*([A-Za-z0-9_.\-]+)\s*(?:\[CALL_ID\]\s*([A-Za-z0-9]+)\s*)?(\[ARGS\])?\s*")
_ALPHABET = string.ascii_letters + string.digits
_ID = re.compile(r"[A-Za-z0-9]{9}")


def call_id(name: str, arguments: str, index: int) -> str:
    """A stable 9-alphanumeric id (the Mistral templates reject anything else), derived with sha256."""
    digest = int.from_bytes(hashlib.sha256(f"{index}:{name}:{arguments}".encode()).digest()[:8], "big")
    chars = []
    for _ in range(9):
        digest, r = divmod(digest, len(_ALPHABET))
        chars.append(_ALPHABET[r])
    return "".join(chars)


def _id_for(call: ParsedCall, index: int) -> str:
    """The call's own id when it is the 9-alphanumeric kind, else a derived one (templates reject others)."""
    return call.id if call.id and _ID.fullmatch(call.id) else call_id(call.name, call.arguments, index)


def _v11_call(segment: str, truncated: bool) -> tuple[ParsedCall | None, list[str], int]:
    """`NAME[CALL_ID]id[ARGS]{json}` at the start of `segment` → (call, errors, end of the call)."""
    head = _V11_HEAD.match(segment)
    if head is None or segment[head.end():head.end() + 1] != "{":
        return None, [f"no tool call after {TOOL_CALLS}"], 0
    name, cid, start = head.group(1), head.group(2), head.end()
    decoded = decode_json_at(segment, start)
    if decoded is not None and isinstance(decoded[0], dict):
        return ParsedCall(id=cid, name=name, arguments=segment[start:decoded[1]]), [], decoded[1]
    if truncated:
        return None, [TRUNCATED], len(segment)
    # Arguments that do not decode are kept as written (upstream passes them through verbatim).
    raw = segment[start:].rstrip()
    return ParsedCall(id=cid, name=name, arguments=raw), [f"arguments of {name} are not valid JSON"], len(segment)


def parse_mistral(text: str, finish_reason: str | None) -> ParseResult:
    reasoning, rest = split_reasoning(text, open_tag="[THINK]", close_tag="[/THINK]", call_markers=(TOOL_CALLS,))
    parts = rest.split(TOOL_CALLS)
    pieces = [parts[0]]
    calls: list[ParsedCall] = []
    errors: list[str] = []
    truncated = is_truncated(finish_reason)
    for n, segment in enumerate(parts[1:], start=1):
        last = n == len(parts) - 1
        first = skip_ws(segment, 0)
        if segment[first:first + 1] in ("[", "{"):
            scan = scan_calls(segment, first)
            found, errs = scan.finish(truncated and last)
            if not found and errs and not scan.calls and scan.partial is None:
                pieces.append(segment)  # nothing call-like: keep the text, report the attempt
            else:
                pieces.append(segment[scan.end:])
            calls += found
            errors += errs
            continue
        call, errs, end = _v11_call(segment, truncated and last)
        errors += errs
        if call is not None:
            calls.append(call)
        pieces.append(segment[end:] if end else segment)
    return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)


class MistralParser(ToolParser):
    name = "mistral"
    vllm_names: ClassVar[tuple[str, ...]] = ("mistral",)
    families: ClassVar[tuple[str, ...]] = ("Mistral-7B-Instruct-v0.3", "Mistral-Nemo", "Mixtral", "Mistral-Small ≤ 3.1")
    model_patterns: ClassVar[tuple[str, ...]] = (r"mistral", r"mixtral", r"ministral")
    template_markers: ClassVar[tuple[str, ...]] = ('"[TOOL_CALLS][', '"[TOOL_CALLS] [')

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        return parse_mistral(text, finish_reason)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        if not tool_calls:
            return content or ""
        items = ", ".join(
            f'{{"name": {json.dumps(c.name, ensure_ascii=False)}, "arguments": {c.arguments}, '
            f'"id": "{_id_for(c, i)}"}}'
            for i, c in enumerate(tool_calls))
        return (content or "") + f"{TOOL_CALLS}[{items}]"


class MistralV11Parser(MistralParser):
    """Small-3.2 / Magistral / Devstral: one `[TOOL_CALLS]NAME[CALL_ID]id[ARGS]{json}` per call."""

    name = "mistral_v11"
    vllm_names = ("mistral",)
    families = ("Mistral-Small-3.2", "Magistral", "Devstral")
    model_patterns = (r"mistral-small-3\.2", r"mistral-small-(?:24b-instruct-)?2506", r"magistral", r"devstral",
                      r"mistral-medium-3")
    template_markers = ("'[CALL_ID]'", "[ARGS]")
    priority = 1

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        head = f"[THINK]{reasoning}[/THINK]" if reasoning else ""
        calls = "".join(f"{TOOL_CALLS}{c.name}[CALL_ID]{_id_for(c, i)}[ARGS]{c.arguments}"
                        for i, c in enumerate(tool_calls))
        return head + (content or "") + calls
