"""Hermes / Qwen format: one JSON object per `<tool_call>…</tool_call>` block, optional `<think>` block.

Qwen2.5, Qwen3 (thinking on and off), QwQ, Hermes-2-Pro/3. Options: `thinking` (None = decide from the
text; True = the prompt pre-filled `<think>`; False = thinking off).
"""

from __future__ import annotations

import json
import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.end_of_turn import END_OF_TURN, strip_end_of_turn
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    call_from_json_object,
    decode_json_at,
    is_truncated,
    join_content,
    skip_ws,
    split_reasoning,
)
from wtb_local.formats.parsers.base import ToolParser

_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARGS_KEY = re.compile(r'"(?:arguments|parameters)"\s*:\s*')
# Drops end-of-turn tokens a backend left at the end of the completion (the one shared table).
strip_end_tokens = strip_end_of_turn


def recover_call(body: str) -> ParsedCall | None:
    """Name and raw argument text of a call object that is not valid JSON (None without a name)."""
    name = _NAME.search(body)
    if not name:
        return None
    try:
        name_text = json.loads(f'"{name.group(1)}"')
    except ValueError:
        name_text = name.group(1)
    key = _ARGS_KEY.search(body, name.end()) or _ARGS_KEY.search(body)
    raw = body[key.end() :].strip() if key else ""
    if raw.endswith("}") and raw.count("}") > raw.count("{"):
        raw = raw[:-1].rstrip()  # the call object's own closing brace
    return ParsedCall(name=name_text, arguments=raw)


def json_block_calls(body: str, *, missing_ok: bool = True) -> list[ParsedCall] | None:
    """Calls of one block body holding a JSON object (or a list of objects); None when it is not JSON or
    holds something that is not a call."""
    start = skip_ws(body, 0)
    decoded = decode_json_at(body, start)
    if decoded is None:
        return None
    value, _ = decoded
    if isinstance(value, dict):
        found = call_from_json_object(body, start, value, missing_ok=missing_ok)
        return [found] if found else None
    if isinstance(value, list) and value:
        calls: list[ParsedCall] = []
        i = skip_ws(body, start + 1)
        for item in value:  # re-walk the list to find each object's start for as-written argument text
            item_decoded = decode_json_at(body, i)
            if item_decoded is None:
                return None
            found = call_from_json_object(body, skip_ws(body, i), item, missing_ok=missing_ok)
            if found is None:
                return None
            calls.append(found)
            i = skip_ws(body, item_decoded[1])
            i = skip_ws(body, i + 1) if i < len(body) and body[i] == "," else i
        return calls
    return None


class HermesParser(ToolParser):
    name = "hermes"
    vllm_names: ClassVar[tuple[str, ...]] = ("hermes",)
    families: ClassVar[tuple[str, ...]] = ("Qwen2.5-Instruct", "Qwen3 (thinking on/off)", "QwQ", "Hermes-2-Pro", "Hermes-3")
    # Qwen3-Coder and Qwen3.5 write XML calls (qwen3_coder), so "qwen3-" must not swallow them.
    model_patterns: ClassVar[tuple[str, ...]] = (r"qwen2\.5", r"qwen2-", r"qwen3-(?!coder)", r"qwq", r"hermes-[23]", r"hermes-2-pro")
    # Qwen templates escape the quotes inside a Jinja string; Hermes-2-Pro writes them plain.
    template_markers: ClassVar[tuple[str, ...]] = ('{\\"name\\": <function-name>', '{"name": <function-name>')
    priority = 0

    open_tag: ClassVar[str] = "<tool_call>"
    close_tag: ClassVar[str] = "</tool_call>"
    think_open: ClassVar[str] = "<think>"
    think_close: ClassVar[str] = "</think>"
    end_tokens: ClassVar[tuple[str, ...]] = END_OF_TURN

    def parse(
        self, text: str, *, tools: list[ToolSchema] | None = None, finish_reason: str | None = None
    ) -> ParseResult:
        text = strip_end_tokens(text or "", self.end_tokens)
        reasoning, rest = split_reasoning(
            text,
            thinking=self.options.get("thinking"),
            open_tag=self.think_open,
            close_tag=self.think_close,
            call_markers=(self.open_tag,),
        )
        content: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        pos = 0
        block = 0
        while True:
            start = rest.find(self.open_tag, pos)
            if start < 0:
                content.append(rest[pos:])
                break
            content.append(rest[pos:start])
            block += 1
            body_start = start + len(self.open_tag)
            end = rest.find(self.close_tag, body_start)
            closed = end >= 0
            body = rest[body_start:end] if closed else rest[body_start:]
            pos = end + len(self.close_tag) if closed else len(rest)
            unclosed = f"tool call block {block}: no {self.close_tag} (an unterminated block); call kept"
            found = json_block_calls(body)
            if found is not None:
                calls += found
                if found and not closed:
                    errors.append(unclosed)
                continue
            if not closed and is_truncated(finish_reason):
                errors.append(f"{TRUNCATED}: block {block} cut off at the token limit")
                continue
            recovered = recover_call(body)
            if recovered is not None:
                calls.append(recovered)
                errors.append(
                    f"tool call block {block}: the call object is not valid JSON; arguments kept as raw text"
                )
                if not closed:
                    errors.append(unclosed)
            else:
                errors.append(f"tool call block {block}: not a JSON call object")
                content.append(rest[start:pos])
        return ParseResult(
            reasoning=reasoning, content=join_content(content), tool_calls=calls, errors=errors
        )

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        parts = []
        if reasoning is not None or self.options.get("thinking"):  # thinking on: the block is always closed
            parts.append(f"{self.think_open}\n{reasoning or ''}\n{self.think_close}\n\n")
        if content:
            parts.append(content + ("\n" if tool_calls else ""))
        parts.append("\n".join(f"{self.open_tag}\n{self.call_json(c)}\n{self.close_tag}" for c in tool_calls))
        return "".join(parts)

    @staticmethod
    def call_json(call: ParsedCall) -> str:
        """`{"name": …, "arguments": …}` with the argument text inserted as written."""
        args = call.arguments if decode_json_at(call.arguments, 0) else json.dumps(call.arguments)
        return f'{{"name": {json.dumps(call.name, ensure_ascii=False)}, "arguments": {args}}}'
