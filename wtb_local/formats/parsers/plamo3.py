"""PFN PLaMo 3 (vLLM `plamo3`): calls as special-token framed requests,

    <|plamo:begin_tool_requests:plamo|>
      <|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>NAME<|plamo:end_tool_name:plamo|>
      <|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{JSON}<|plamo:end_tool_arguments:plamo|>
      <|plamo:end_tool_request:plamo|>…
    <|plamo:end_tool_requests:plamo|>

(written without the line breaks). Arguments keep the model's JSON text. Reasoning:
`<|plamo:begin_think:plamo|>…<|plamo:end_think:plamo|>`; PLaMo 3's prompt opens the block unless
`enable_thinking` is false, so a reply is read as starting inside it by default (`thinking=False` reads it
as an answer); a tool block ends the reasoning even without the end-think marker, and a marker cut in
half at the end of the text is dropped. `<|plamo:tag|>` ends the turn. A request whose closers never came
at a normal stop keeps its call with an error (docs/parser-policies.md, unterminated blocks); one cut
before its name or arguments are complete is no call.
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
    skip_ws,
    split_reasoning,
)
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens


def _m(name: str) -> str:
    return f"<|plamo:{name}:plamo|>"


REQUESTS_OPEN, REQUESTS_CLOSE = _m("begin_tool_requests"), _m("end_tool_requests")
REQUEST_OPEN, REQUEST_CLOSE = _m("begin_tool_request"), _m("end_tool_request")
NAME_OPEN, NAME_CLOSE = _m("begin_tool_name"), _m("end_tool_name")
ARGS_OPEN, ARGS_CLOSE = _m("begin_tool_arguments"), _m("end_tool_arguments")
JSON_PREFIX = "<|plamo:constrain|>json<|plamo:msg|>"
THINK_OPEN, THINK_CLOSE = _m("begin_think"), _m("end_think")
_PARTIAL_MARKER = re.compile(r"<\|plamo:[a-z_:]*\|?$")


class Plamo3Parser(ToolParser):
    name = "plamo3"
    vllm_names: ClassVar[tuple[str, ...]] = ("plamo3",)
    families = ("PLaMo 3",)
    model_patterns = (r"pfnet/plamo-?3", r"(^|/)plamo-?3")
    template_markers = (REQUEST_OPEN,)
    thinking: ClassVar[bool] = True  # the prompt opens the think block unless thinking is switched off

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = _PARTIAL_MARKER.sub("", strip_end_tokens(text or ""))
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking", self.thinking),
                                          open_tag=THINK_OPEN, close_tag=THINK_CLOSE,
                                          call_markers=(REQUESTS_OPEN, REQUEST_OPEN))
        unterminated = rest.count(REQUESTS_OPEN) > rest.count(REQUESTS_CLOSE)
        rest = rest.replace(REQUESTS_OPEN, "").replace(REQUESTS_CLOSE, "")
        pieces: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        starts = [m.start() for m in re.finditer(re.escape(REQUEST_OPEN), rest)]
        pos = 0
        for n, start in enumerate(starts):
            pieces.append(rest[pos:start])
            limit = starts[n + 1] if n + 1 < len(starts) else len(rest)
            cut = is_truncated(finish_reason) and n == len(starts) - 1
            call, end = self._request(rest, start + len(REQUEST_OPEN), limit, errors, cut=cut)
            if call is not None:
                calls.append(call)
            elif not cut:
                pieces.append(rest[start:end])
            pos = end
        pieces.append(rest[pos:])
        if unterminated and calls and not any(e.startswith(TRUNCATED) for e in errors):
            errors.append(f"no {REQUESTS_CLOSE} (an unterminated block); calls kept")
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    @staticmethod
    def _request(text: str, at: int, limit: int, errors: list[str], *, cut: bool) -> tuple[ParsedCall | None, int]:
        """The call of the request whose body starts at `at` (the next request starts at `limit`), and where
        the request ends."""
        close = text.find(REQUEST_CLOSE, at, limit)
        end = close + len(REQUEST_CLOSE) if close >= 0 else limit
        body = text[at:close if close >= 0 else limit]
        if cut and close < 0:
            errors.append(TRUNCATED)
            return None, limit
        name_at = body.find(NAME_OPEN)
        name_end = body.find(NAME_CLOSE)
        if name_at < 0 or name_end < name_at or not body[name_at + len(NAME_OPEN):name_end].strip():
            errors.append(f"a tool request without a complete name: {body[:60]!r}; kept as text")
            return None, end
        name = body[name_at + len(NAME_OPEN):name_end].strip()
        args_at = body.find(ARGS_OPEN, name_end)
        if args_at < 0:
            if close < 0:
                errors.append(f"a tool request for {name!r} without arguments or its end; kept as text")
                return None, end
            return ParsedCall(name=name, arguments="{}"), end
        i = args_at + len(ARGS_OPEN)
        if body.startswith(JSON_PREFIX, i):
            i += len(JSON_PREFIX)
        args_close = body.find(ARGS_CLOSE, i)
        decoded = decode_json_at(body, i)
        if decoded is not None and isinstance(decoded[0], dict):
            raw = body[skip_ws(body, i):decoded[1]]
            trailing = body[decoded[1]:args_close if args_close >= 0 else len(body)].strip()
            if trailing:
                errors.append(f"call {name!r}: text after the arguments object: {trailing[:40]!r}")
        else:
            raw = body[i:args_close if args_close >= 0 else len(body)].strip()
            errors.append(f"call {name!r}: the arguments are not a JSON object; kept as raw text")
        if close < 0:
            errors.append(f"call {name!r}: no {REQUEST_CLOSE} (an unterminated request); call kept")
        return ParsedCall(name=name, arguments=raw), end

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        head = f"{THINK_OPEN}{reasoning or ''}{THINK_CLOSE}"
        if not tool_calls:
            return head + (content or "")
        requests = "".join(
            f"{REQUEST_OPEN}{NAME_OPEN}{c.name}{NAME_CLOSE}{ARGS_OPEN}{JSON_PREFIX}"
            f"{c.arguments if decode_json_at(c.arguments, 0) else json.dumps(c.arguments)}{ARGS_CLOSE}{REQUEST_CLOSE}"
            for c in tool_calls)
        return head + (content or "") + REQUESTS_OPEN + requests + REQUESTS_CLOSE
