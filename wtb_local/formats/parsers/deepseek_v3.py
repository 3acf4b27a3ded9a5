"""DeepSeek-V3 / V3-0324 and R1 / R1-0528 tool calls (also read by the V3.1 parser).

`<｜tool▁calls▁begin｜>` opens a section of `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME` + a ```json
fence holding the arguments + `<｜tool▁call▁end｜>` entries, closed by `<｜tool▁calls▁end｜>`. The markers
use fullwidth bars and `▁`; ASCII look-alikes (`|`, `_`) are accepted because some decoders normalise
them. R1's template pre-fills `<think>\n`, so its completions start inside the reasoning block.
"""

from __future__ import annotations

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

CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"


def _marker(words: str) -> re.Pattern[str]:
    return re.compile("<[｜|]" + "[▁_ ]".join(words.split()) + "[｜|]>")


_CALLS_BEGIN = _marker("tool calls begin")
_CALLS_END = _marker("tool calls end")
_CALL_BEGIN = _marker("tool call begin")
_CALL_END = _marker("tool call end")
_SEP = _marker("tool sep")
_ANY_MARKER = re.compile("<[｜|]tool[▁_ ](?:calls?[▁_ ](?:begin|end)|sep)[｜|]>")


def _parse_call_body(body: str) -> tuple[ParsedCall | None, str | None]:
    """One call entry, V3 (`function<sep>NAME\\n```json\\n{…}\\n````) or V3.1 (`NAME<sep>{…}`) layout."""
    sep = _SEP.search(body)
    if sep is None:
        return None, "tool call without <｜tool▁sep｜>"
    pre, post = body[:sep.start()].strip(), body[sep.end():]
    if pre and pre != "function":
        name, region = pre, post  # V3.1: the name precedes the separator
    else:
        cut = min((i for i in (post.find("\n"), post.find("```")) if i >= 0), default=len(post))
        name, region = post[:cut].strip(), post[cut:]
    if not name:
        return None, "tool call without a function name"
    region = region.strip()
    if region.startswith("```"):
        newline = region.find("\n")
        region = region[newline + 1:] if newline >= 0 else region[3:].removeprefix("json")
    region = region.removesuffix("```")
    region = region.strip()
    decoded = decode_json_at(region, 0)
    if decoded is None or not isinstance(decoded[0], dict):
        return ParsedCall(name=name, arguments=region), f"arguments of {name} are not a JSON object"
    return ParsedCall(name=name, arguments=region[:decoded[1]]), None


def parse_deepseek(text: str, reasoning: str | None, finish_reason: str | None) -> ParseResult:
    """Calls of either DeepSeek layout in `text` (reasoning already split off)."""
    opened = _CALLS_BEGIN.search(text) or _CALL_BEGIN.search(text)
    if opened is None:
        errors = ["tool call markup without a call"] if _ANY_MARKER.search(text) else []
        return ParseResult(reasoning=reasoning, content=join_content([text]), errors=errors)
    start = opened.end() if _CALLS_BEGIN.match(text, opened.start()) else opened.start()
    closed = _CALLS_END.search(text, start)
    section = text[start:closed.start() if closed else len(text)]
    pieces = [text[:opened.start()], text[closed.end():] if closed else ""]
    calls: list[ParsedCall] = []
    errors = []
    begins = list(_CALL_BEGIN.finditer(section))
    if not begins:
        return ParseResult(reasoning=reasoning, content=join_content([text]),
                           errors=["tool call section without <｜tool▁call▁begin｜>"])
    for n, begin in enumerate(begins):
        limit = begins[n + 1].start() if n + 1 < len(begins) else len(section)
        end = _CALL_END.search(section, begin.end(), limit)
        if end is None and is_truncated(finish_reason) and closed is None:
            errors.append(TRUNCATED)
            break
        call, error = _parse_call_body(section[begin.end():end.start() if end else limit])
        if call is not None:
            calls.append(call)
        if error:
            errors.append(error)
        elif end is None:
            errors.append(f"tool call to {call.name if call else '?'} without <｜tool▁call▁end｜>")
    if closed is None and not errors and is_truncated(finish_reason):
        errors.append(TRUNCATED)
    elif closed is None and calls and _CALLS_BEGIN.match(text, opened.start()):
        errors.append("no <｜tool▁calls▁end｜> (an unterminated section); calls kept")
    return ParseResult(reasoning=reasoning, content=join_content(pieces), tool_calls=calls, errors=errors)


class DeepSeekV3Parser(ToolParser):
    name = "deepseek_v3"
    vllm_names: ClassVar[tuple[str, ...]] = ("deepseek_v3",)
    families: ClassVar[tuple[str, ...]] = ("DeepSeek-V3", "DeepSeek-V3-0324")
    model_patterns: ClassVar[tuple[str, ...]] = (r"deepseek-v3(?!\.\d)",)
    template_markers: ClassVar[tuple[str, ...]] = ("tool['type'] + '<｜tool▁sep｜>'",)
    thinking: ClassVar[bool | None] = None  # V3 does not think; a block it writes anyway is still split off

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        reasoning, rest = split_reasoning(text, thinking=self.options.get("thinking", self.thinking),
                                          call_markers=(CALLS_BEGIN, CALL_BEGIN))
        return parse_deepseek(rest, reasoning, finish_reason)

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        # V3 does not think: there is no reasoning to write.
        return (content or "") + self.calls_text(tool_calls)

    @staticmethod
    def calls_text(tool_calls: list[ParsedCall]) -> str:
        if not tool_calls:
            return ""
        entries = "\n".join(f"{CALL_BEGIN}function{SEP}{c.name}\n```json\n{c.arguments}\n```{CALL_END}"
                            for c in tool_calls)
        return CALLS_BEGIN + entries + CALLS_END


class DeepSeekR1Parser(DeepSeekV3Parser):
    """R1 / R1-0528 and the R1 distills: same calls, and the completion starts inside `<think>`."""

    name = "deepseek_r1"
    vllm_names = ("deepseek_v3",)
    families = ("DeepSeek-R1", "DeepSeek-R1-0528", "DeepSeek-R1-Distill")
    model_patterns = (r"deepseek-r1",)
    template_markers = ("content.split('</think>')[-1] %}", "<｜Assistant｜><think>")
    priority = 1  # the R1 override template also carries the V3 call marker
    thinking = True

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        # The distill templates pre-fill `<think>\n` (the parser then reads a completion without it);
        # R1-0528's tool template does not, and the model opens the block itself, as written here.
        return f"<think>\n{reasoning or ''}\n</think>\n\n" + (content or "") + self.calls_text(tool_calls)
