"""Kimi-K2 format: one section of calls, each with a native id `functions.NAME:IDX`:

    <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>
    {"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>

The id is kept (the Kimi template re-renders history with it and tool results refer to it). Argument text
is kept as written; invalid JSON is passed through as raw text with an error (as vLLM does). The singular
`<|tool_call_section_begin|>` variant is accepted; K2-Thinking's `<think>` block is split off.
"""

from __future__ import annotations

import re

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

SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"
CALL_BEGIN, ARG_BEGIN, CALL_END = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"
_SECTION_BEGIN = re.compile(r"<\|tool_calls?_section_begin\|>")
_SECTION_END = re.compile(r"<\|tool_calls?_section_end\|>")
_ID = re.compile(r"\s*(?:functions\.)?([\w.\-]+?):(\d+)\s*")


class KimiK2Parser(ToolParser):
    name = "kimi_k2"
    vllm_names = ("kimi_k2",)
    families = ("Kimi-K2-Instruct", "Kimi-K2-Thinking")
    model_patterns = (r"kimi-k2", r"kimi_k2")
    template_markers = ("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>")
    priority = 0

    def parse(
        self, text: str, *, tools: list[ToolSchema] | None = None, finish_reason: str | None = None
    ) -> ParseResult:
        text = strip_end_tokens(text or "")
        reasoning, rest = split_reasoning(
            text, thinking=self.options.get("thinking"), call_markers=("<|tool_call",)
        )
        content: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        pos = 0
        while True:
            begin = _SECTION_BEGIN.search(rest, pos)
            if begin is None:
                tail = rest[pos:]
                if CALL_BEGIN in tail or ARG_BEGIN in tail:
                    errors.append("tool call markup outside a <|tool_calls_section_begin|> section")
                content.append(tail)
                break
            content.append(rest[pos : begin.start()])
            end = _SECTION_END.search(rest, begin.end())
            section = rest[begin.end() : end.start() if end else len(rest)]
            pos = end.end() if end else len(rest)
            before = len(calls)
            self._parse_section(section, truncated=is_truncated(finish_reason), calls=calls, errors=errors)
            if end is None and len(calls) > before:
                errors.append("no <|tool_calls_section_end|> (an unterminated section); calls kept")
        return ParseResult(
            reasoning=reasoning, content=join_content(content), tool_calls=calls, errors=errors
        )

    @staticmethod
    def _parse_section(section: str, *, truncated: bool, calls: list[ParsedCall], errors: list[str]) -> None:
        for n, chunk in enumerate(section.split(CALL_BEGIN)[1:], start=1):
            head, sep, tail = chunk.partition(ARG_BEGIN)
            finished = CALL_END in tail
            if not finished and truncated:
                errors.append(f"{TRUNCATED}: call {n} cut off at the token limit")
                continue
            match = _ID.fullmatch(head)
            if not sep or match is None:
                errors.append(f"call {n}: id {head.strip()[:60]!r} is not functions.NAME:IDX; call skipped")
                continue
            raw = tail.split(CALL_END, 1)[0].strip()
            decoded = decode_json_at(raw, 0)
            call_id = head.strip()
            if decoded is None or skip_ws(raw, decoded[1]) != len(raw) or not isinstance(decoded[0], dict):
                errors.append(
                    f"call {n} ({match.group(1)}): arguments are not a JSON object; kept as raw text"
                )
            calls.append(ParsedCall(id=call_id, name=match.group(1), arguments=raw))
            if not finished:
                errors.append(f"call {n} ({match.group(1)}): no <|tool_call_end|> (an unterminated call); call kept")

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        if not tool_calls:
            return content or ""
        items = []
        for idx, c in enumerate(tool_calls):
            call_id = c.id if c.id and _ID.fullmatch(c.id) else f"functions.{c.name}:{idx}"
            items.append(f"{CALL_BEGIN}{call_id}{ARG_BEGIN}{c.arguments}{CALL_END}")
        return f"{content or ''}{SECTION_BEGIN}{''.join(items)}{SECTION_END}"
