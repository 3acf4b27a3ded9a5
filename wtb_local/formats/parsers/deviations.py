"""Tool calls written outside the run's tool-call format (docs/parser-policies.md §3).

A model trained on one format sometimes writes its calls in another wrapper: fenced JSON
(```` ```json {"name": ..., "arguments": ...} ``` ````), a bare JSON object or list, or another family's
native markup. The run's parser reads none of them, so the step is judged as a text reply.
`format_deviation` names the wrapper, from the text alone, trying in this order:

1. `format:<parser>`: another registered parser's format, for every parser whose markup occurs in the
   text, unless it writes the same format as the run's parser or also reads plain JSON;
2. `fenced_json`: a ``` block holding a call-shaped JSON object or a list of them;
3. `bare_json`: such a JSON value elsewhere in the text;
4. `format:<parser>` for the parsers left out of 1 because they also read plain JSON (hammer's fenced
   lists, say): 2 and 3 name such text first.

What each format looks like is learnt from the parser itself (its own `format` of a probe call): its
markup, whether it also reads plain JSON, and whether two parsers write the same text. A parser added to
the registry is covered without an edit here.

A call counts when it is call-shaped (a non-empty string `name` and an object, or JSON text of one, under
`arguments` or `parameters`; not a tool's JSON schema), names one of the step's tools (any name when the
tools are not known), and is not one the run's parser, or a parser writing the same format, read from the
text. Which text: after the reasoning block the run's parser split off (calls inside it are
`calls_in_reasoning`, §1); when the parser read calls, only the content it left beside them.
"""

from __future__ import annotations

import json
import re
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import FormatDeviation, ParsedCall, ParseResult
from wtb_local.formats.parsers.registry import parser_classes

FENCED_JSON = "fenced_json"
BARE_JSON = "bare_json"
FORMAT_PREFIX = "format:"

_PROBE_NAME = "wtb_probe_call"
_PROBE = ParsedCall(name=_PROBE_NAME, arguments='{"wtb_probe_key": "wtb_probe_value"}')
_PROBE_JSON = '{"name": "wtb_probe_call", "arguments": {"wtb_probe_key": "wtb_probe_value"}}'
# How a plain-JSON call looks; a parser reading any of these also reads what `fenced_json`/`bare_json` name.
_PLAIN = (_PROBE_JSON, _PROBE_JSON.replace('"arguments"', '"parameters"'), f"[{_PROBE_JSON}]",
          f"```json\n{_PROBE_JSON}\n```", f"```json\n[{_PROBE_JSON}]\n```")
_TEXT_REPLY = "\u00a4"  # a text-only reply: what a format writes before any reply is not call markup
_MARKER_CHARS = 16
_MAX_TEXT = 200_000  # longer replies are read up to here: a count, not a reason to stall a run
_MAX_STARTS = 512  # JSON decoding attempts per reply
_FENCE = re.compile(r"```[A-Za-z0-9_+.-]*[ \t]*\n?(.*?)```", re.DOTALL)
_OPENING = re.compile(r"[\[{]")
_DECODER = json.JSONDecoder()

CallKey = tuple[str, str]  # (name, arguments as sorted JSON text)


@dataclass(frozen=True)
class Shape:
    """What one registered parser's format looks like, learnt from its own rendering of a probe call."""

    name: str
    call_text: str  # the probe call as the parser writes it, less what it writes before any reply
    marker: str  # the first piece of markup before the call ('' when the call starts bare)
    plain: bool  # the parser also reads plain JSON calls
    priority: int


def _instance(cls: type) -> Any:
    try:
        return cls(thinking=False)  # the text examined is past any reasoning block
    except Exception:  # noqa: BLE001 - a parser with other required options
        return cls()


def _call_text(parser: Any, calls: list[ParsedCall] | None = None) -> str:
    """Calls in the parser's format, less the prefix it shares with a text-only reply (a `<think></think>`
    or `<|channel|>` written before any reply), cut back to the end of a piece of markup; trailing whitespace
    is no part of a format (Laguna writes GLM-4.5's calls with a final newline)."""
    rendered = parser.format(None, calls or [_PROBE])
    reply = parser.format(_TEXT_REPLY, [])
    shared = 0
    for a, b in zip(rendered, reply):
        if a != b:
            break
        shared += 1
    while shared and rendered[shared - 1] not in ">]|}\n\t ":
        shared -= 1
    return rendered[shared:].rstrip()


def _marker(call_text: str) -> str:
    """The markup before the call: up to the JSON value holding the call's name, or up to the name."""
    at = call_text.find(_PROBE_NAME)
    if at < 0:
        return ""
    start = at
    for opening in _OPENING.finditer(call_text, 0, at):
        try:
            _, end = _DECODER.raw_decode(call_text, opening.start())
        except ValueError:
            continue
        if end > at:
            start = opening.start()
            break
    pieces = call_text[:start].split()
    return pieces[0][:_MARKER_CHARS] if pieces else ""


def _reads_plain_json(parser: Any) -> bool:
    for text in _PLAIN:
        try:
            calls = parser.parse(text, tools=None, finish_reason="stop").tool_calls
        except Exception:  # noqa: BLE001, S112 - a parser that cannot read it does not read it
            continue
        if any(call.name == _PROBE_NAME for call in calls):
            return True
    return False


@cache
def _registered() -> tuple[tuple[Shape, Any], ...]:
    """(shape, parser instance) of every registered parser whose format can be learnt, by name."""
    found = []
    for name, cls in parser_classes().items():
        try:
            parser = _instance(cls)
            call_text = _call_text(parser)
            shape = Shape(name, call_text, _marker(call_text), _reads_plain_json(parser), int(cls.priority))
        except Exception:  # noqa: BLE001, S112 - a parser that cannot render a probe call is not tried
            continue
        found.append((shape, parser))
    return tuple(found)


@dataclass(frozen=True)
class _Plan:
    """The registered parsers split for one run parser: those writing its own format, and the others in
    the order they are tried (module docstring: 1, then 4)."""

    own: tuple[tuple[Shape, Any], ...]
    first: tuple[tuple[Shape, Any], ...]
    last: tuple[tuple[Shape, Any], ...]
    markers: frozenset[str]  # of `first`; '' when one of them is tried on every text


_PLANS: weakref.WeakKeyDictionary[Any, _Plan] = weakref.WeakKeyDictionary()


def _plan(parser: Any) -> _Plan:
    """Raises what the run's own parser raises rendering the probe call (a bug of ours: the step's internal
    error, never a plan silently without the run's own format), unless it writes no format at all
    (NotImplementedError: a vLLM parser without a wtb_local mirror)."""
    try:
        return _PLANS[parser]
    except (KeyError, TypeError):
        pass
    try:
        own_text: str | None = _call_text(parser)
    except NotImplementedError:
        own_text = None
    name = getattr(parser, "name", None)
    own, first, last = [], [], []
    for shape, instance in _registered():
        if shape.name == name or (own_text is not None and shape.call_text == own_text):
            own.append((shape, instance))
        elif not shape.plain:
            first.append((shape, instance))
        elif shape.marker:  # a plain-JSON parser without markup: its format is what 2 and 3 name
            last.append((shape, instance))
    plan = _Plan(tuple(own), tuple(first), tuple(last), frozenset(shape.marker for shape, _ in first))
    try:
        _PLANS[parser] = plan
    except TypeError:  # not weakly referable: computed again next time
        pass
    return plan


# --- call-shaped JSON -------------------------------------------------------------------------------------


def _arguments_key(arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def _call_shaped(value: Any) -> CallKey | None:
    """(name, arguments) of a JSON call object: `{"name", "arguments"|"parameters"}`, or the same under
    `"function"` (the OpenAI tool-call entry). A tool's schema (`{"type": "object", "properties"}`) is not
    a call."""
    if isinstance(value, dict) and "name" not in value and isinstance(value.get("function"), dict):
        value = value["function"]
    if not isinstance(value, dict):
        return None
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    key = "arguments" if "arguments" in value else "parameters" if "parameters" in value else None
    if key is None:
        return None
    arguments = value[key]
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    if arguments.get("type") == "object" and isinstance(arguments.get("properties"), dict):
        return None
    return name, _arguments_key(arguments)


def _calls_in(value: Any) -> list[CallKey]:
    """The calls of a JSON value: one call object, or a non-empty list of nothing but call objects."""
    single = _call_shaped(value)
    if single is not None:
        return [single]
    if isinstance(value, list) and value:
        calls = [_call_shaped(item) for item in value]
        if all(call is not None for call in calls):
            return [call for call in calls if call is not None]
    return []


def _json_calls(text: str, budget: list[int]) -> list[CallKey]:
    """Call-shaped JSON values anywhere in `text`, outermost first; a value that is not a call is looked
    into (`{"tool_calls": [...]}`)."""
    if '"name"' not in text:
        return []
    calls: list[CallKey] = []
    after = 0
    for opening in _OPENING.finditer(text):
        if opening.start() < after:
            continue
        if budget[0] <= 0:
            break
        budget[0] -= 1
        try:
            value, end = _DECODER.raw_decode(text, opening.start())
        except ValueError:
            continue
        found = _calls_in(value)
        if found:
            calls.extend(found)
            after = end
    return calls


def _fenced_calls(text: str, budget: list[int]) -> list[CallKey]:
    calls: list[CallKey] = []
    for fence in _FENCE.finditer(text):
        body = fence.group(1).strip()
        try:
            found = _calls_in(json.loads(body))
        except ValueError:
            found = _json_calls(body, budget)
        calls.extend(found)
    return calls


def _bare_calls(text: str, budget: list[int]) -> list[CallKey]:
    return _json_calls(_FENCE.sub(lambda fence: " " * len(fence.group(0)), text), budget)


# --- the detection ------------------------------------------------------------------------------------------


def _key(call: ParsedCall) -> CallKey:
    try:
        return call.name, _arguments_key(json.loads(call.arguments))
    except ValueError:
        return call.name, call.arguments


def _tool_names(tools: list[ToolSchema] | None) -> set[str] | None:
    if not tools:
        return None
    names = set()
    for tool in tools:
        # a bare function description, as some sources write tools, counts too
        entry: Mapping[str, Any] = tool.get("function") if isinstance(tool, dict) and isinstance(tool.get("function"), dict) else tool
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            names.add(entry["name"])
    return names or None


def _examined(text: str, result: ParseResult) -> str:
    """The text a call in a foreign wrapper is looked for in (module docstring)."""
    if result.tool_calls:
        return result.content or ""
    if result.reasoning:
        at = text.find(result.reasoning)
        return text[at + len(result.reasoning):] if at >= 0 else result.content or ""
    return text


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _parse(parser: Any, text: str, tools: list[ToolSchema] | None) -> list[ParsedCall]:
    try:
        return list(parser.parse(text, tools=tools, finish_reason="stop").tool_calls)
    except Exception:  # noqa: BLE001 - a parser that cannot read it does not read it
        return []


def _written_so(parser: Any, calls: list[ParsedCall], text: str) -> tuple[int, int]:
    """How closely the parser's own rendering of these calls is in the text: 2 byte for byte, 1 whitespace
    aside, 0 not at all (GLM-4.7 writes GLM-4.5's calls without the newlines: both read either); then the
    rendering's length, so that of two renderings in the text the fuller one names it (Hy4 wraps GLM-4.7's
    calls in <tool_calls>: both are in Hy4's text)."""
    try:
        written = _call_text(parser, calls)
        level = 2 if written in text else 1 if _squeezed(written) in _squeezed(text) else 0
        return level, len(_squeezed(written)) if level else 0
    except Exception:  # noqa: BLE001
        return 0, 0


def _foreign(text: str, candidates: Iterable[tuple[Shape, Any]], tools: list[ToolSchema] | None,
             offered: Callable[[str], bool], fresh: Callable[[list[CallKey]], int]) -> FormatDeviation | None:
    """The registered format that reads the most new calls from the text; ties: the parser whose own
    rendering of them is in the text (byte for byte before whitespace aside), then the lowest priority (a higher one marks a specialisation of
    a format others share, docs/parsers-and-templates.md), then the name."""
    best: tuple[tuple[Any, ...], str, int] | None = None
    for shape, parser in candidates:
        if shape.marker and shape.marker not in text:
            continue
        calls = [call for call in _parse(parser, text, tools) if offered(call.name)]
        count = fresh([_key(call) for call in calls])
        if not count:
            continue
        level, length = _written_so(parser, calls, text)
        rank = (-count, -level, -length, shape.priority, shape.name)
        if best is None or rank < best[0]:
            best = (rank, shape.name, count)
    return FormatDeviation(kind=FORMAT_PREFIX + best[1], calls=best[2]) if best else None


def _detect(parser: Any, text: str, result: ParseResult,
            tools: list[ToolSchema] | None) -> FormatDeviation | None:
    examined = _examined(text, result)[:_MAX_TEXT]
    plan = _plan(parser)
    if not ('"name"' in examined or "" in plan.markers or any(m in examined for m in plan.markers)
            or any(shape.marker in examined for shape, _ in plan.last)):
        return None  # no markup of another format and no JSON call: the common text reply
    names: list[set[str] | None] = []

    def offered(name: str) -> bool:
        if not names:
            names.append(_tool_names(tools))
        return names[0] is None or name in names[0]

    already: list[Counter[CallKey]] = []

    def fresh(keys: list[CallKey]) -> int:
        """How many of these calls neither the run's parser nor a parser of its format read."""
        if not keys:
            return 0
        if not already:
            read = Counter(_key(call) for call in result.tool_calls)
            for _, instance in plan.own:
                for key, count in Counter(_key(call) for call in _parse(instance, examined, tools)).items():
                    read[key] = max(read[key], count)
            already.append(read)
        return sum((Counter(keys) - already[0]).values())

    found = _foreign(examined, plan.first, tools, offered, fresh)
    if found is not None:
        return found
    budget = [_MAX_STARTS]
    for kind, finder in ((FENCED_JSON, _fenced_calls), (BARE_JSON, _bare_calls)):
        count = fresh([key for key in finder(examined, budget) if offered(key[0])])
        if count:
            return FormatDeviation(kind=kind, calls=count)
    return _foreign(examined, plan.last, tools, offered, fresh)


def format_deviation(parser: Any, text: str, result: ParseResult,
                     tools: list[ToolSchema] | None = None) -> FormatDeviation | None:
    """The foreign wrapper this reply wrote tool calls in that `parser` (which gave `result`) did not read,
    None when there is none (module docstring). Raises only what the run's own parser raised (`_plan`); an
    error of the other parsers or of the detection is a count not made, not a reason for a step to fail."""
    _plan(parser)  # outside the guard below (kept for the run: `_detect` reads it back)
    try:
        return _detect(parser, text or "", result, tools)
    except Exception:  # noqa: BLE001
        return None


def shapes() -> list[Shape]:
    """Every registered parser's learnt format (for `parsers list` and the tests)."""
    return [shape for shape, _ in _registered()]
