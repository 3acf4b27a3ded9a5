"""xLAM-2 format: a JSON list of `{"name": …, "arguments": {…}}` objects.

Llama-xLAM-2-8b/70b-fc-r and xLAM-2-1b/3b/32b-fc-r. The list may stand alone, sit in a ``` / ```json
fence, follow `[TOOL_CALLS]`, be wrapped in `<tool_call>…</tool_call>` or come after prose or a
`<think>` block (all seen in practice and accepted by vLLM's xlam parser). A single call object is accepted
too. An empty list `[]` is not a call: it stays content (the paper's harness accepts it as a text reply).
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
    split_reasoning,
)
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import json_block_calls, recover_call, strip_end_tokens

_CALL_START = re.compile(r'(?:\[\s*)?\{\s*"name"\s*:')
_BEFORE = re.compile(r"(?:```(?:json)?|\[TOOL_CALLS\]|<tool_call>)\s*$")
_AFTER = re.compile(r"\s*(?:```|</tool_call>)")


class XlamParser(ToolParser):
    name = "xlam"
    vllm_names: ClassVar[tuple[str, ...]] = ("xlam",)
    families: ClassVar[tuple[str, ...]] = ("xLAM-2 (Llama-xLAM-2-8b/70b-fc-r, xLAM-2-1b/3b/32b-fc-r)",)
    model_patterns: ClassVar[tuple[str, ...]] = (r"xlam",)
    template_markers: ClassVar[tuple[str, ...]] = ("make calls in a single JSON array", "Salesforce xLAM team")
    priority = 10  # Llama-xLAM ids also look like Llama ids

    fence: ClassVar[str] = ""  # how `format` wraps the list ("" = bare list)

    def parse(
        self, text: str, *, tools: list[ToolSchema] | None = None, finish_reason: str | None = None
    ) -> ParseResult:
        text = strip_end_tokens(text or "")
        reasoning, text = split_reasoning(text, thinking=False)
        content: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        pos = 0
        while True:
            match = _CALL_START.search(text, pos)
            if match is None:
                content.append(text[pos:])
                break
            start = match.start()
            decoded = decode_json_at(text, start)
            # A bare object needs its arguments key to count as a call; items of a list do not.
            found = (
                json_block_calls(text[start : decoded[1]], missing_ok=text[start] == "[") if decoded else None
            )
            if found and decoded:  # (found only where decoded)
                content.append(_strip_suffix(text[pos:start]))
                calls += found
                pos = _skip_wrapper(text, decoded[1])
                continue
            if decoded:  # valid JSON with a "name" that is not a call: prose
                content.append(text[pos : decoded[1]])
                pos = decoded[1]
                continue
            content.append(_strip_suffix(text[pos:start]))
            end = _fragment_end(text, match.end())
            if end == len(text) and is_truncated(finish_reason):
                errors.append(f"{TRUNCATED}: the call list was cut off at the token limit")
            else:
                recovered = recover_call(text[start:end].strip().lstrip("[").rstrip("]"))
                if recovered:
                    calls.append(recovered)
                    errors.append(f"call {recovered.name!r}: not valid JSON; arguments kept as raw text")
                else:
                    errors.append("call list is not valid JSON")
            pos = _skip_wrapper(text, end)
        return ParseResult(
            reasoning=reasoning, content=join_content(content), tool_calls=calls, errors=errors
        )

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        body = ""
        if tool_calls:
            items = ", ".join(
                f'{{"name": {json.dumps(c.name, ensure_ascii=False)}, "arguments": '
                f"{c.arguments if decode_json_at(c.arguments, 0) else json.dumps(c.arguments)}}}"
                for c in tool_calls
            )
            body = f"[{items}]"
            if self.fence:
                body = f"{self.fence}\n{body}\n```"
        if content and body:
            return f"{content}\n{body}"
        return content or body


def _strip_suffix(piece: str) -> str:
    return _BEFORE.sub("", piece)


def _skip_wrapper(text: str, i: int) -> int:
    match = _AFTER.match(text, i)
    return match.end() if match else i


def _fragment_end(text: str, i: int) -> int:
    """End of a broken call list: the closing fence/tag, the next call list, or the end of the text."""
    ends = [p for p in (text.find("```", i), text.find("</tool_call>", i)) if p >= 0]
    nxt = re.compile(r'\[\s*\{\s*"name"\s*:').search(text, i)
    if nxt:
        ends.append(nxt.start())
    return min(ends) if ends else len(text)
