"""Llama 3.1 / 3.2 / 3.3 JSON calls: `{"name": …, "parameters": {…}}` (or `"arguments"`), optionally after
`<|python_tag|>`; several calls separated by `;`, newlines or repeated tags (not an official Llama feature,
but vLLM and SGLang accept it and models do it). Prose around the JSON is kept as content.
"""

from __future__ import annotations

import json
import re

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import TRUNCATED, decode_json_at, is_truncated, join_content
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import json_block_calls, recover_call, strip_end_tokens

PYTHON_TAG = "<|python_tag|>"
# Where a call object starts: `{"name":` (also inside a list `[{"name":`).
_CALL_START = re.compile(r'\[?\s*\{\s*"name"\s*:')
_SEPARATORS = " \t\r\n;,"


class Llama3JsonParser(ToolParser):
    name = "llama3_json"
    vllm_names = ("llama3_json", "llama4_json")
    families = ("Llama-3.1-Instruct", "Llama-3.2-Instruct", "Llama-3.3-Instruct")
    model_patterns = (r"llama-3\.[123]", r"llama3\.[123]", r"llama-3-", r"llama3-")
    template_markers = ('"parameters": dictionary of argument name and its value',)
    priority = -1  # fine-tunes with their own formats (Hermes-3, xLAM, ToolACE) carry "llama-3" in their ids

    def parse(
        self, text: str, *, tools: list[ToolSchema] | None = None, finish_reason: str | None = None
    ) -> ParseResult:
        text = strip_end_tokens(text or "")
        content: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        i = 0  # start of the pending content
        j = 0  # scan position
        while True:
            j = _next_candidate(text, j)
            if j < 0:
                content.append(text[i:])
                break
            decoded = decode_json_at(text, j)
            found = json_block_calls(text[j : decoded[1]], missing_ok=False) if decoded else None
            if found and decoded is not None:
                content.append(text[i:j])
                calls += found
                i = j = _skip_separators(text, decoded[1])
                continue
            if decoded:  # JSON that is not a call: prose, keep scanning after it
                j = decoded[1]
                continue
            start = _CALL_START.match(text, j)
            if not start:
                j += 1
                continue
            # A call object that is not valid JSON: it runs to the next call start or the end.
            nxt = _CALL_START.search(text, start.end())
            end = nxt.start() if nxt else len(text)
            content.append(text[i:j])
            if nxt is None and is_truncated(finish_reason):
                errors.append(f"{TRUNCATED}: the last call object was cut off at the token limit")
            else:
                recovered = recover_call(text[j:end].strip().lstrip("["))
                if recovered:
                    calls.append(recovered)
                    errors.append(f"call {recovered.name!r}: arguments are not valid JSON; kept as raw text")
                else:
                    errors.append("call object is not valid JSON")
            i = j = _skip_separators(text, end)
        cleaned = [piece.replace(PYTHON_TAG, "") for piece in content]
        return ParseResult(content=join_content(cleaned), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        body = "; ".join(
            f'{{"name": {json.dumps(c.name, ensure_ascii=False)}, "parameters": '
            f"{c.arguments if decode_json_at(c.arguments, 0) else json.dumps(c.arguments)}}}"
            for c in tool_calls
        )
        if content and body:
            return f"{content}\n{body}"
        return content or body


def _next_candidate(text: str, start: int) -> int:
    hits = [p for p in (text.find("{", start), text.find("[", start)) if p >= 0]
    return min(hits) if hits else -1


def _skip_separators(text: str, i: int) -> int:
    while True:
        while i < len(text) and text[i] in _SEPARATORS:
            i += 1
        if text.startswith(PYTHON_TAG, i):
            i += len(PYTHON_TAG)
            continue
        return i
