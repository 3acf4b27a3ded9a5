"""GLM-4.5 / 4.5-Air / 4.6 format (GLM-4.7 and GLM-5.x: glm47.py, the same calls without the newline):

    <tool_call>NAME
    <arg_key>KEY</arg_key>
    <arg_value>VALUE</arg_value>
    </tool_call>

Values are raw text typed by the tool's schema (strings stay as written; numbers, booleans, null, objects
and arrays are decoded once); unknown tools/parameters keep strings. Reasoning: `<think>…</think>`.
GLM-4.6 sometimes writes literal `\\n` between tags and backslash-escaped quotes inside JSON values; both
are tolerated. Options: `thinking` as for hermes.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from wtb_local.contract.messages import JSONObject, ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import (
    TRUNCATED,
    coerce_value,
    dumps_arguments,
    is_truncated,
    join_content,
    split_reasoning,
    tool_schemas,
)
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_PAIR = re.compile(r"<arg_key>(.*?)</arg_key>(?:\s|\\n)*<arg_value>(.*?)</arg_value>", re.DOTALL)
_NAME_END = re.compile(r"\\n|\n|<arg_key>|$")


class Glm45Parser(ToolParser):
    name = "glm45"
    vllm_names: ClassVar[tuple[str, ...]] = ("glm45",)
    families: ClassVar[tuple[str, ...]] = ("GLM-4.5", "GLM-4.5-Air", "GLM-4.6")
    model_patterns: ClassVar[tuple[str, ...]] = (r"glm-4\.[56]", r"glm-4\.\d-air", r"glm4\.[56]", r"glm-4-moe", r"glm4_moe")
    template_markers: ClassVar[tuple[str, ...]] = ("<arg_key>",)
    priority = 5  # its template also mentions <tool_call>
    # what a function name may look like (anything else is a broken call, kept as text with an error)
    name_pattern: ClassVar[re.Pattern[str]] = re.compile(r"[^\s<>]+")
    # the call wrapper (IQuest-Q1 writes <iquest_tool_call>); subclasses of other families change it
    open_tag: ClassVar[str] = OPEN
    close_tag: ClassVar[str] = CLOSE
    # an unbalanced <arg_key>/<arg_value> block: False keeps the call with the readable pairs (and an
    # error); True keeps the block as text with an error, no call (IQuest-Q1, as SGLang reads it)
    unbalanced_is_text: ClassVar[bool] = False

    def parse(
        self, text: str, *, tools: list[ToolSchema] | None = None, finish_reason: str | None = None
    ) -> ParseResult:
        text = strip_end_tokens(text or "")
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking", getattr(self, "thinking", None)),
                                          call_markers=(self.open_tag,))
        schemas = tool_schemas(tools)
        content: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        pos = 0
        while True:
            start = rest.find(self.open_tag, pos)
            if start < 0:
                content.append(rest[pos:])
                break
            content.append(rest[pos:start])
            body_start = start + len(self.open_tag)
            end = rest.find(self.close_tag, body_start)
            body = rest[body_start:end] if end >= 0 else rest[body_start:]
            pos = end + len(self.close_tag) if end >= 0 else len(rest)
            if end < 0 and is_truncated(finish_reason):
                errors.append(f"{TRUNCATED}: {self.open_tag} block cut off at the token limit")
                continue
            name = body[: next(_NAME_END.finditer(body)).start()].strip()  # "$" always matches
            leftover = _PAIR.sub("", body)
            if not self.name_pattern.fullmatch(name or " "):
                errors.append("tool call block without a function name")
                content.append(rest[start:pos])
                continue
            if self.unbalanced_is_text and ("<arg_key>" in leftover or "<arg_value>" in leftover):
                errors.append(f"call {name!r}: unbalanced <arg_key>/<arg_value> tags; the block is kept as text")
                content.append(rest[start:pos])
                continue
            if "<arg_key>" in leftover or "<arg_value>" in leftover:
                errors.append(
                    f"call {name!r}: unbalanced <arg_key>/<arg_value> tags; those pairs are dropped"
                )
            props = schemas.get(name, {}).get("properties")
            props = props if isinstance(props, dict) else {}
            args = {key.strip(): self.typed(value, props.get(key.strip())) for key, value in _PAIR.findall(body)}
            calls.append(ParsedCall(name=name, arguments=dumps_arguments(args)))
            if end < 0:
                errors.append(f"call {name!r}: no {self.close_tag} (an unterminated block); call kept")
        return ParseResult(
            reasoning=reasoning, content=join_content(content), tool_calls=calls, errors=errors
        )

    def typed(self, raw: str, schema: dict[str, Any] | None) -> Any:
        """One raw value typed by its parameter's schema (a family may read a type its own way)."""
        return _typed(raw, schema)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        parts = []
        if reasoning is not None:
            parts.append(f"<think>{reasoning}</think>\n")
        if content:
            parts.append(content + ("\n" if tool_calls else ""))
        for c in tool_calls:
            try:
                args = json.loads(c.arguments)
            except ValueError:
                args = {}
            pairs = "".join(
                f"<arg_key>{k}</arg_key>\n<arg_value>"
                f"{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}</arg_value>\n"
                for k, v in (args.items() if isinstance(args, dict) else [])
            )
            parts.append(f"{OPEN}{c.name}\n{pairs}{CLOSE}\n")
        return "".join(parts).rstrip("\n") if tool_calls else "".join(parts)


def _typed(raw: str, schema: JSONObject | None) -> Any:
    value = coerce_value(raw, schema)
    if isinstance(value, str) and schema and not _wants_string(schema) and '\\"' in raw:
        # GLM-4.6 sometimes escapes the quotes of a JSON value as if it sat inside a JSON string.
        try:
            value = coerce_value(json.loads(f'"{raw}"'), schema)
        except ValueError:
            pass
    return value


def _wants_string(schema: JSONObject) -> bool:
    kinds = schema.get("type")
    return kinds == "string" or (isinstance(kinds, list) and "string" in kinds)
