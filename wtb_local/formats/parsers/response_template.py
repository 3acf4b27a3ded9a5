"""The generic parser driven by a checkpoint's `response_template` metadata (tokenizer_config.json), vLLM's
`hf` and SGLang's `response_template`: a model that declares its reply format needs no code of its own.

The metadata names the message fields a reply is cut into, each a region of the text:

    {"start_anchor": "<|turn>model\\n",
     "fields": {"thinking": {"open": "<|channel>thought\\n", "close": "<channel|>"},
                "tool_calls": {"open_pattern": "<\\\\|tool_call>call:(?P<name>\\\\w+)", "close": "<tool_call|>",
                               "content": "json", "content_args": {"unquoted_keys": true}, "repeats": true,
                               "transform": {"type": "function",
                                             "function": {"name": "{name}", "arguments": "{content}"}}},
                "content": {"close": ["<turn|>"]}}}

A field opens at its `open` literal(s) or `open_pattern` and ends at its `close`; at most one field has no
opener: it takes the text outside the other regions (without one, that text is the content). A region's
body is read by its `content` parser (`text`, `json` with the `unquoted_keys`, `string_delims` and
`allow_non_json` knobs, `xml-inline` with a `tag_pattern`, `kv-lines`, `int`, `float`, `bool`), then reshaped by
`transform`, whose whole-string field references (`{content}`, a named group of the opener, `{content.key}`)
take the parsed body and the opener's captures. `thinking` (or `reasoning`) is the reply's reasoning,
`content` its content, `tool_calls` its calls (`{"function": {"name", "arguments"}}` or `{"name",
"arguments"}`, one or a list). The completion follows the prompt's start anchor, so it starts outside every
region.

Our policies where the metadata's own reader drops a region (docs/parser-policies.md): a call region whose
body does not read is an error, not a call, and its text stays in the content; a call region never closed at a
normal stop is read, with an error naming the missing close; at the token limit it is an error. Options:
`response_template` (the metadata, a dict or its JSON text; the run passes the checkpoint's own), `thinking`
(True: the prompt opened the reasoning field, so the reply starts inside it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers._common import TRUNCATED, dumps_arguments, is_truncated, join_content
from wtb_local.formats.parsers.base import ToolParser

_FIELD_REFERENCE = re.compile(r"\{(\w+(?:\.\w+)*)\}")
_REASONING_FIELDS = ("thinking", "reasoning", "reasoning_content")
_CALL_FIELDS = ("tool_calls",)


METADATA_PARSERS = ("response_template", "hf")  # ours and vLLM's name for it


def declared_response_template(tokenizer: Any = None, model: str | None = None) -> dict[str, Any] | str | None:
    """The `response_template` a checkpoint declares in tokenizer_config.json: as a loaded tokenizer carries
    it (an attribute, or among its init kwargs), else from the model's file on disk (a local directory or
    the hub cache; never downloaded)."""
    for found in (getattr(tokenizer, "response_template", None),
                  (getattr(tokenizer, "init_kwargs", None) or {}).get("response_template")):
        if isinstance(found, (dict, str)) and found:
            return found
    if model:
        from wtb_local.formats.checkpoint import model_file  # deferred: only without a loaded tokenizer

        path = model_file(model, "tokenizer_config.json")
        try:
            found = json.loads(path.read_text(encoding="utf-8")).get("response_template") if path else None
        except (OSError, ValueError, AttributeError):
            found = None
        if isinstance(found, (dict, str)) and found:
            return found
    return None


class TemplateError(ValueError):
    """The metadata itself cannot be read (a bug of the checkpoint's metadata, never a model outcome)."""


class NoOwnFormat(TemplateError, NotImplementedError):
    """Asked to write a reply without a checkpoint's metadata: this parser has no format of its own (the
    format-deviation census reads a NotImplementedError as "writes no format", formats/parsers/deviations.py)."""


@dataclass(frozen=True)
class Field:
    name: str
    open: re.Pattern[str] | None
    open_literals: tuple[str, ...]
    close: re.Pattern[str] | None
    close_literals: tuple[str, ...]
    content: str
    args: dict[str, Any]
    transform: Any
    transform_each: bool
    join: str | None


def _anchor(spec: dict[str, Any], literal: str, pattern: str, where: str) -> tuple[re.Pattern[str] | None, tuple[str, ...]]:
    if literal in spec and pattern in spec:
        raise TemplateError(f"{where}: both {literal!r} and {pattern!r}")
    if literal in spec:
        raw = spec[literal]
        items = [raw] if isinstance(raw, str) else raw
        if not isinstance(items, list) or not items or not all(isinstance(s, str) and s for s in items):
            raise TemplateError(f"{where}: {literal!r} must be a non-empty string or list of them")
        ordered = sorted(dict.fromkeys(items), key=len, reverse=True)
        return re.compile("|".join(re.escape(s) for s in ordered)), tuple(items)
    if pattern in spec:
        try:
            return re.compile(spec[pattern], re.DOTALL), ()
        except (re.error, TypeError) as exc:
            raise TemplateError(f"{where}: {pattern!r} is not a regex ({exc})") from None
    return None, ()


def load_template(spec: Any) -> tuple[list[Field], Field | None]:
    """(fields with an opener, the field without one) of a response_template; TemplateError when unreadable."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError as exc:
            raise TemplateError(f"response_template is not JSON ({exc})") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("fields"), dict) or not spec["fields"]:
        raise TemplateError("response_template needs a non-empty 'fields' object")
    opened: list[Field] = []
    implicit: list[Field] = []
    for name, raw in spec["fields"].items():
        if not isinstance(raw, dict):
            raise TemplateError(f"response_template field {name!r} is not an object")
        where = f"response_template field {name!r}"
        open_re, open_lits = _anchor(raw, "open", "open_pattern", where)
        close_re, close_lits = _anchor(raw, "close", "close_pattern", where)
        content = raw.get("content", "text")
        if content not in _CONTENT:
            raise TemplateError(f"{where}: unknown content parser {content!r}")
        field = Field(name, open_re, open_lits, close_re, close_lits, content, dict(raw.get("content_args") or {}),
                      raw.get("transform"), bool(raw.get("transform_each")), raw.get("join"))
        (opened if open_re is not None else implicit).append(field)
    if len(implicit) > 1:
        raise TemplateError(f"response_template: fields {[f.name for f in implicit]} all lack an opener")
    return opened, implicit[0] if implicit else None


# --- content parsers (the metadata's vocabulary) -------------------------------------------------------------


def _text(body: str, args: dict[str, Any]) -> str:
    return body.strip() if args.get("strip", True) else body


def _json(body: str, args: dict[str, Any]) -> Any:
    working = body
    strings: list[str] = []

    def hold(match: re.Match[str]) -> str:
        # a custom-delimited string is set aside as a numbered marker first, so its text is never touched below
        strings.append(match.group(1))
        return f"\x01{len(strings) - 1}\x02"

    for pair in args.get("string_delims") or []:
        opener, closer = pair
        working = re.sub(re.escape(opener) + r"(.*?)" + re.escape(closer), hold, working, flags=re.DOTALL)
    if args.get("unquoted_keys"):
        working = re.sub(r"(?<=[{,])\s*([A-Za-z_]\w*)\s*:", r'"\1":', working)
    for n, s in enumerate(strings):
        working = working.replace(f"\x01{n}\x02", json.dumps(s, ensure_ascii=False))
    try:
        return json.loads(working)
    except (ValueError, RecursionError):
        if args.get("allow_non_json"):
            return _text(body, args)
        raise ValueError(f"not JSON: {body.strip()[:60]!r}") from None


def _sub(raw: str, spec: Any) -> Any:
    if not isinstance(spec, dict):
        return raw
    return _parse_content(raw, spec.get("name", "text"), spec.get("args") or {})


def _xml_inline(body: str, args: dict[str, Any]) -> dict[str, Any]:
    pattern = args.get("tag_pattern")
    if not isinstance(pattern, str):
        raise TypeError("xml-inline content without a tag_pattern")
    out: dict[str, Any] = {}
    for match in re.finditer(pattern, body, flags=re.DOTALL):
        key, value = match.groupdict().get("key"), _sub(match.groupdict().get("value") or "", args.get("value_parser"))
        if key is None:
            raise ValueError("xml-inline tag_pattern without a 'key' group")
        if key in out and args.get("merge_duplicates"):
            out[key] = (out[key] if isinstance(out[key], list) else [out[key]]) + [value]
        else:
            out[key] = value
    return out


def _kv_lines(body: str, args: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for line in body.split(args.get("line_sep", "\n")):
        line = _text(line, args)
        sep = args.get("kv_sep", ":")
        if line and sep in line:
            key, value = line.split(sep, 1)
            out[_text(key, args)] = _sub(_text(value, args), args.get("value_parser"))
    return out


_CONTENT = {
    "text": _text,
    "int": lambda body, args: int(_text(body, args)),
    "float": lambda body, args: float(_text(body, args)),
    "bool": lambda body, args: _text(body, args).lower() in ("true", "1"),
    "json": _json,
    "xml-inline": _xml_inline,
    "kv-lines": _kv_lines,
}


def _parse_content(body: str, name: str, args: dict[str, Any]) -> Any:
    if name not in _CONTENT:
        raise ValueError(f"unknown content parser {name!r}")
    return _CONTENT[name](body, args)


def _apply(transform: Any, scope: dict[str, Any]) -> Any:
    if isinstance(transform, dict):
        return {k: _apply(v, scope) for k, v in transform.items()}
    if isinstance(transform, list):
        return [_apply(v, scope) for v in transform]
    if not isinstance(transform, str) or not (whole := _FIELD_REFERENCE.fullmatch(transform)):
        return transform
    root, *keys = whole.group(1).split(".")
    if root not in scope:
        raise ValueError(f"transform field {transform!r} is not defined")
    value = scope[root]
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            raise ValueError(f"transform field {transform!r} has no {key!r}")
        value = value[key]
    return value


def _value(field: Field, body: str, captures: dict[str, Any]) -> Any:
    value = _parse_content(body, field.content, field.args)
    if field.transform is None:
        return value
    if field.transform_each:
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise ValueError("transform_each needs a list of objects")
        return [_apply(field.transform, {**captures, **item}) for item in value]
    return _apply(field.transform, {**captures, "content": value})


def _calls(value: Any) -> list[ParsedCall]:
    """Calls from a tool_calls value: `{"function": {"name", "arguments"}}`, `{"name", "arguments"}`, or a
    list of them. ValueError when it is none of these."""
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        fn = item.get("function") if isinstance(item, dict) and isinstance(item.get("function"), dict) else item
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ValueError(f"not a call: {json.dumps(item, ensure_ascii=False)[:60]}")
        args = fn.get("arguments", fn.get("parameters", {}))
        text = args if isinstance(args, str) else dumps_arguments(args if args is not None else {})
        call_id = item.get("id") if isinstance(item, dict) and isinstance(item.get("id"), str) else None
        calls.append(ParsedCall(id=call_id, name=fn["name"], arguments=text))
    return calls


class ResponseTemplateParser(ToolParser):
    name = "response_template"
    vllm_names: ClassVar[tuple[str, ...]] = ("hf",)
    families = ("any checkpoint whose tokenizer_config.json declares a response_template",)
    # chosen from the checkpoint's metadata, never from an id (run/setup/parser_choice.py)
    model_patterns = ()

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        spec = self.options.get("response_template")
        if spec is None:
            return ParseResult(content=join_content([text or ""]), errors=[
                ("the response_template parser needs the checkpoint's response_template metadata "
                 "(tokenizer_config.json), and none was given")])
        try:
            opened, implicit = load_template(spec)
        except TemplateError as exc:
            return ParseResult(content=join_content([text or ""]), errors=[str(exc)])
        reader = _Reader(opened, implicit, is_truncated(finish_reason))
        think = next((f for f in opened if f.name in _REASONING_FIELDS), None)
        if self.options.get("thinking") is True and think is not None:  # the prompt opened the reasoning field
            return reader.read(text or "", inside=think)
        return reader.read(text or "")

    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        spec = self.options.get("response_template")
        if spec is None:  # no format of its own: it writes what a checkpoint's metadata declares
            raise NoOwnFormat("the response_template parser writes a reply only by a checkpoint's metadata")
        opened, _implicit = load_template(spec)
        by_name = {f.name: f for f in opened}
        parts = []
        think = next((by_name[n] for n in _REASONING_FIELDS if n in by_name), None)
        if reasoning is not None and think is not None:
            parts.append(think.open_literals[0] + reasoning + (think.close_literals or ("",))[0])
        parts.append(content or "")
        calls = next((by_name[n] for n in _CALL_FIELDS if n in by_name), None)
        for c in tool_calls:
            if calls is None:
                break
            args = c.arguments
            if calls.open_literals:
                body = json.dumps({"name": c.name, "arguments": json.loads(args)}, ensure_ascii=False)
                parts.append(calls.open_literals[0] + body + (calls.close_literals or ("",))[0])
            else:  # an opener pattern naming the call: written with the name in its group
                opener = re.sub(r"\(\?P<name>[^)]*\)", c.name, calls.open.pattern if calls.open else "")
                parts.append(re.sub(r"\\(.)", r"\1", opener) + args + (calls.close_literals or ("",))[0])
        return "".join(parts)


class _Reader:
    def __init__(self, opened: list[Field], implicit: Field | None, truncated: bool) -> None:
        self.opened = opened
        self.implicit = implicit
        self.truncated = truncated
        self.values: dict[str, list[Any]] = {}
        self.calls: list[ParsedCall] = []
        self.errors: list[str] = []

    def read(self, text: str, inside: Field | None = None) -> ParseResult:
        pos = 0
        sink_open = True  # the opener-less field (or the content) takes text until its close
        if inside is not None:
            close = inside.close.search(text) if inside.close is not None else None
            self.region(inside, text[:close.start()] if close else text, {}, closed=close is not None or
                        inside.close is None, whole=text[:close.end()] if close else text)
            pos = close.end() if close else len(text) + 1
        while pos <= len(text):
            # an opener must consume text (a zero-width one would open the same region forever)
            candidates = [(m.start(), -(m.end() - m.start()), 0, f.name, f, m) for f in self.opened
                          if (m := next((o for o in f.open.finditer(text, pos) if o.end() > o.start()),  # type: ignore[union-attr]
                                        None)) is not None]
            if sink_open and self.implicit is not None and self.implicit.close is not None:
                m = self.implicit.close.search(text, pos)
                if m is not None:
                    candidates.append((m.start(), -(m.end() - m.start()), 1, self.implicit.name, self.implicit, m))
            if not candidates:
                self.outside(text[pos:], sink_open)
                break
            start, _, kind, _, field, match = min(candidates, key=lambda c: c[:4])
            self.outside(text[pos:start], sink_open)
            if kind == 1:  # the opener-less field closes: what follows is no field's
                sink_open = False
                pos = match.end()
                continue
            close = field.close.search(text, match.end()) if field.close is not None else None
            if close is None and field.close is not None:
                body, pos = text[match.end():], len(text) + 1
                self.region(field, body, match.groupdict(), closed=False, whole=text[start:])
                break
            end = close.start() if close is not None else len(text)
            self.region(field, text[match.end():end], match.groupdict(), closed=True,
                        whole=text[start:close.end() if close is not None else len(text)])
            pos = close.end() if close is not None else len(text) + 1
        reasoning = next((self.values[n] for n in _REASONING_FIELDS if n in self.values), None)
        content = self.values.get("content", [])
        return ParseResult(reasoning=join_content(map(str, reasoning)) if reasoning else None,
                           content=join_content(map(str, content)), tool_calls=self.calls, errors=self.errors)

    def outside(self, piece: str, sink_open: bool) -> None:
        """Text outside the opened regions: the opener-less field's (the content when there is none)."""
        if piece and sink_open:
            name = self.implicit.name if self.implicit is not None else "content"
            self.values.setdefault(name, []).append(piece)

    def region(self, field: Field, body: str, captures: dict[str, Any], *, closed: bool, whole: str) -> None:
        is_call = field.name in _CALL_FIELDS
        if not closed and self.truncated and is_call:
            self.errors.append(TRUNCATED)
            return
        try:
            value = _value(field, body, captures)
            found = _calls(value) if is_call else None
        except (ValueError, TypeError) as exc:
            if not is_call:
                self.errors.append(f"response_template field {field.name!r}: {exc}")
                return
            # not a call: the region stays in the content as written (its name may be cut short, as a
            # hyphenated name the opener's pattern stops at)
            self.errors.append(f"a {field.name} region that cannot be read ({exc}): not read as a call")
            self.values.setdefault("content", []).append(whole)
            return
        if not closed and field.close_literals and is_call:
            self.errors.append(f"no {field.close_literals[0]} (an unterminated {field.name} region)"
                               + ("; calls kept" if found else ""))
        if found is not None:
            self.calls += found
        else:
            self.values.setdefault(field.name, []).append(value)
