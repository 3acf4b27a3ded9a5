"""InternLM2/2.5/3 and Intern-S1 (vLLM `internlm`, SGLang `interns1`): one JSON call object per action,

    content<|action_start|><|plugin|>
    {"name": "NAME", "parameters": {…}}<|action_end|>

whitespace allowed between the tokens and before the object; the arguments sit under `parameters` or
`arguments`, their text kept as written. Intern-S1 thinks in `<think>…</think>` (vLLM serves it with the
`deepseek_r1` reasoning parser). An action never closed at a normal stop keeps its call with an error.
"""

from __future__ import annotations

import json
import re
from typing import ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import is_truncated, join_content, split_reasoning
from wtb_local.formats.parsers._json_calls import scan_object
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.hermes import strip_end_tokens

START, PLUGIN, END = "<|action_start|>", "<|plugin|>", "<|action_end|>"
_OPEN = re.compile(re.escape(START) + r"\s*" + re.escape(PLUGIN) + r"\s*")


class InternlmParser(ToolParser):
    name = "internlm"
    vllm_names: ClassVar[tuple[str, ...]] = ("internlm",)
    families = ("InternLM2", "InternLM2.5", "InternLM3", "Intern-S1")
    model_patterns = (r"internlm2", r"internlm3", r"intern-s1", r"interns1")
    template_markers = ("<|plugin|>",)
    priority = 1

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        text = strip_end_tokens(text or "")
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking"), call_markers=(START,))
        pieces: list[str] = []
        calls: list[ParsedCall] = []
        errors: list[str] = []
        found = list(_OPEN.finditer(rest))
        pos = 0
        for n, opener in enumerate(found):
            if opener.start() < pos:
                continue
            pieces.append(rest[pos:opener.start()])
            limit = found[n + 1].start() if n + 1 < len(found) else len(rest)
            close = rest.find(END, opener.end(), limit)
            segment = rest[opener.end():close if close >= 0 else limit]
            pos = close + len(END) if close >= 0 else limit
            cut = close < 0 and n == len(found) - 1 and is_truncated(finish_reason)
            if not segment.strip():
                errors.append("truncated tool call" if cut else f"no JSON call object after {PLUGIN}")
                if not cut:
                    pieces.append(rest[opener.start():pos])
                continue
            if segment.lstrip()[0] != "{":
                errors.append(f"no JSON call object after {PLUGIN}: {segment.strip()[:60]!r}")
                pieces.append(rest[opener.start():pos])
                continue
            scan = scan_object(segment, len(segment) - len(segment.lstrip()))
            got, errs = scan.finish(cut)
            calls += got
            errors += errs
            if got and close < 0 and not cut and scan.complete:
                errors.append(f"no {END} after the call (an unterminated action); call kept")
            if not got and not scan.calls and scan.partial is None and errs[-1:] != ["truncated tool call"]:
                pieces.append(rest[opener.start():pos])
        pieces.append(rest[pos:])
        return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        head = f"<think>{reasoning}</think>" if reasoning is not None else ""
        actions = "".join(
            f'{START}{PLUGIN}\n{{"name": {json.dumps(c.name, ensure_ascii=False)}, "parameters": '
            f'{c.arguments if c.arguments.strip() else "{}"}}}{END}' for c in tool_calls)
        return head + (content or "") + actions
