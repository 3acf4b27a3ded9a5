"""The paper harness's per-family parse rules (paper-harness.md §2), as tool-call parsers.

Each rule reads the completion after the tokenizer's special tokens are removed (the harness decodes
with `skip_special_tokens=True`, §1.2). No rule strips `<think>`: reasoning text stays in the content
(§2). What the harness returns as `(None, None)` is a step error here (`errors`, no calls); what it
returns as text is a text reply, accepted where the gold expects ask or answer.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers.base import ToolParser

QWEN_CALL = re.compile(r"<tool_call>\n(.+)?\n</tool_call>")  # `.` stops at newlines: one-line JSON only
HAMMER_MARK = '```\n[{"name"'
HAMMER_PLACEHOLDER = "[model doesnt choose function(Manual placeholder)]"
EMPTY_LIST_TEXT = "use  to solve user problem"  # `[]` -> no calls, this text (§2.4, §2.7)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _calls_text(names: list[str]) -> str:
    return "use {} to solve user problem".format(", ".join(names))


def parse_qwen(text: str) -> ParseResult:
    """§2.1: one-line JSON blocks; a block failing JSON is dropped; `arguments` missing -> error."""
    calls: list[ParsedCall] = []
    for match in QWEN_CALL.finditer(text):
        body = match.group(1)
        try:
            value = json.loads(body) if body is not None else None
        except ValueError:
            continue
        if not isinstance(value, dict) or "arguments" not in value or "name" not in value:
            return ParseResult(errors=[f"tool call without name/arguments: {str(body)[:80]}"])
        arguments = value["arguments"]
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return ParseResult(errors=[f"arguments text is not JSON: {arguments[:80]}"])
        calls.append(ParsedCall(name=str(value["name"]), arguments=_dumps(arguments)))
    if calls:
        before = text[: text.index("<tool_call>")]
        return ParseResult(content=before if before.strip() else "", tool_calls=calls)
    stripped = text.removesuffix("<|im_end|>")
    return ParseResult(content=stripped)


def parse_llama(text: str) -> ParseResult:
    """§2.2: a call only when the text contains `function`, `name` and `parameters`; then the whole text
    is JSON: a dict is one call, a list is an error (the harness's conversion crashes), bad JSON is text."""
    if not all(word in text for word in ("function", "name", "parameters")):
        return ParseResult(content=text)
    try:
        value = json.loads(text)
    except ValueError:
        return ParseResult(content=text)
    if isinstance(value, dict) and "name" in value:
        arguments = value.get("parameters", value.get("arguments", {}))
        return ParseResult(content=text, tool_calls=[ParsedCall(name=str(value["name"]), arguments=_dumps(arguments))])
    return ParseResult(errors=["Llama output decoded to a list/without name: calls without id/function"])


def parse_hammer(text: str) -> ParseResult:
    """§2.3: a call only with the exact marker; JSON = text[3:-4]; no marker -> the fixed placeholder text."""
    if HAMMER_MARK not in text:
        return ParseResult(content=HAMMER_PLACEHOLDER)
    try:
        value = json.loads(text[3:-4])
    except ValueError:
        return ParseResult(content=text)
    items = [value] if isinstance(value, dict) else value if isinstance(value, list) else None
    if items is None or not all(isinstance(i, dict) and "name" in i for i in items):
        return ParseResult(errors=[f"Hammer calls without name: {text[:80]}"])
    calls = [ParsedCall(name=str(i["name"]), arguments=_dumps(i.get("arguments", {}))) for i in items]
    return ParseResult(content=_calls_text([c.name for c in calls]), tool_calls=calls)


def _literal(node: ast.AST | None) -> Any:
    """`get_keywords` (§2.4): literals as values, bare `true`/`false` as booleans, other bare names as text."""
    if node is None:  # a dict's `**x`: refused as ast.literal_eval refuses it, in its words
        raise ValueError("malformed node or string: None")
    if isinstance(node, ast.Name):
        return {"true": True, "false": False}.get(node.id, node.id)
    if isinstance(node, ast.List):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values)}
    return ast.literal_eval(node)


def parse_pythonic(text: str) -> ParseResult:
    """§2.4/§2.5: a call list only when the text starts with `[` and ends with `]` (no stripping); every
    top-level call, dotted names keep their last part, keyword arguments only."""
    if not (text.startswith("[") and text.endswith("]")):
        return ParseResult(content=text)
    try:
        tree = ast.parse(text, mode="eval")
        if not isinstance(tree.body, ast.List):
            raise TypeError("not a list")
        calls = []
        for element in tree.body.elts:
            if not isinstance(element, ast.Call):
                continue
            func = element.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name is None:
                raise ValueError("call without a name")
            arguments = {kw.arg: _literal(kw.value) for kw in element.keywords if kw.arg is not None}
            calls.append(ParsedCall(name=name, arguments=_dumps(arguments)))
    except (SyntaxError, ValueError, TypeError) as exc:
        return ParseResult(errors=[f"bracketed output does not parse as calls: {exc}"])
    if not calls:
        return ParseResult(content=EMPTY_LIST_TEXT)
    return ParseResult(content=_calls_text([c.name for c in calls]), tool_calls=calls)


def parse_xlam2(text: str) -> ParseResult:
    """§2.7: a call list only when the text starts with `[`, ends with `]` and is a JSON list."""
    if not (text.startswith("[") and text.endswith("]")):
        return ParseResult(content=text)
    try:
        value = json.loads(text)
    except ValueError:
        return ParseResult(content=text)
    if not isinstance(value, list):
        return ParseResult(content=text)
    if not all(isinstance(i, dict) and "name" in i for i in value):
        return ParseResult(errors=["xLAM-2 call without name"])
    if not value:
        return ParseResult(content=EMPTY_LIST_TEXT)
    calls = [ParsedCall(name=str(i["name"]), arguments=_dumps(i.get("arguments", {}))) for i in value]
    return ParseResult(content=_calls_text([c.name for c in calls]), tool_calls=calls)


def parse_fcm(text: str) -> ParseResult:
    """§2.11: calls need `<function=` and `</function>` in equal numbers; pieces split on `</function>` that
    start with `<function=` give a name (up to `>{`) and JSON arguments; other pieces are skipped; an error
    keeps the calls parsed so far; the text is always the raw output."""
    if "<function=" not in text or "</function>" not in text or text.count("<function=") != text.count("</function>"):
        return ParseResult(content=text)
    calls: list[ParsedCall] = []
    for piece in text.split("</function>"):
        if not piece.startswith("<function="):
            continue
        head, sep, body = piece[len("<function="):].partition(">{")
        try:
            if not sep:
                raise ValueError("no >{")
            arguments = json.loads("{" + body)
        except ValueError:
            break  # errors are swallowed: the calls so far stand
        calls.append(ParsedCall(name=head, arguments=_dumps(arguments)))
    return ParseResult(content=text, tool_calls=calls)


def parse_gorilla(text: str) -> ParseResult:
    """§2.10: the pieces after `<<function>>` are Python calls (keyword arguments; positional ones under
    the key "None"); failing pieces are dropped; none left, or no marker: the stripped output as text."""
    calls: list[ParsedCall] = []
    for piece in [p for p in text.split("<<function>>")[1:] if p.strip()]:
        try:
            node = ast.parse(piece.strip(), mode="eval").body
            if not isinstance(node, ast.Call):
                raise TypeError("not a call")
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name is None:
                raise ValueError("no name")
            arguments: dict[str, Any] = {kw.arg: _literal(kw.value) for kw in node.keywords if kw.arg is not None}
            if node.args:
                arguments["None"] = [_literal(a) for a in node.args]
        except (SyntaxError, ValueError, TypeError):
            continue
        calls.append(ParsedCall(name=name, arguments=_dumps(arguments)))
    return ParseResult(content=text.strip(), tool_calls=calls)


# the project parser whose format a rule's family writes (the oracle, and a replay's recorded parser name)
NATIVE = {"qwen": "hermes", "llama": "llama3_json", "hammer": "hammer", "pythonic": "pythonic", "xlam2": "xlam",
          "fcm": "hermes", "gorilla": "pythonic"}  # fcm/gorilla: no project parser; the paper rule is used


def native_parser_name(name: str) -> str:
    """`paper:native:hermes` -> `hermes`; `paper:qwen` -> `hermes` (a recorded paper run's parser name)."""
    parts = name.split(":")
    return parts[2] if len(parts) == 3 and parts[1] == "native" else NATIVE.get(parts[-1], parts[-1])


RULES = {"qwen": parse_qwen, "llama": parse_llama, "hammer": parse_hammer, "pythonic": parse_pythonic,
         "xlam2": parse_xlam2, "fcm": parse_fcm, "gorilla": parse_gorilla}


def _args(call: ParsedCall) -> Any:
    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments


class PaperParser(ToolParser):
    """One family's parse rule; `native` (the generic rule) wraps the project's parser for the family,
    keeping think text in the content and reading a broken call as text (§2 common facts)."""

    name = "paper"

    def __init__(self, rule: str, *, special_tokens: list[str] | None = None, native: ToolParser | None = None) -> None:
        super().__init__(rule=rule)
        if rule != "native" and rule not in RULES:
            raise ValueError(f"unknown paper parse rule {rule!r}")
        if rule == "native" and native is None:
            raise ValueError("the native paper rule needs the family's parser")
        self.rule = rule
        # each rule is its own parser name, kept on the instance
        native_name = native.name if rule == "native" and native is not None else None  # (None: refused above)
        self.name = f"paper:{rule}" if native_name is None else f"paper:native:{native_name}"  # type: ignore[misc]
        self.native = native
        # longest first, so a token containing another is removed whole
        self.special_tokens = sorted({t for t in (special_tokens or []) if t}, key=len, reverse=True)

    def skip_special(self, text: str) -> str:
        for token in self.special_tokens:
            text = text.replace(token, "")
        return text

    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        """A call written inside `<think>…</think>` is read like any other (the harness strips no think
        block) and counted in `calls_in_reasoning` (docs/parser-policies.md §1)."""
        text = self.skip_special(text or "")
        if self.rule != "native":
            result = RULES[self.rule](text)
            close = text.find("</think>")
            if result.tool_calls and close > 0:  # the calls the same rule reads before the block closes
                before_close = len(RULES[self.rule](text[:close]).tool_calls)
                result = result.model_copy(update={"calls_in_reasoning": before_close})
            return result
        from wtb_local.formats.parsers import reasoning_calls

        native = self._native()
        parsed = native.parse(text, tools=tools, finish_reason=finish_reason)
        inside = reasoning_calls(native, parsed.reasoning, tools)
        calls = inside + parsed.tool_calls
        if not calls or parsed.errors:
            return ParseResult(content=text, calls_in_reasoning=len(inside))  # think text and broken calls stay as text
        think = f"<think>{parsed.reasoning}</think>" if parsed.reasoning else ""
        return ParseResult(content=think + (parsed.content or ""), tool_calls=calls, calls_in_reasoning=len(inside))

    def format(self, content: str | None, tool_calls: list[ParsedCall], reasoning: str | None = None) -> str:
        """What this family's model writes for a reply (oracle backend)."""
        if not tool_calls:
            return content or ""
        if self.rule == "qwen":
            return "\n".join("<tool_call>\n" + _dumps({"name": c.name, "arguments": _args(c)}) + "\n</tool_call>"
                             for c in tool_calls)
        if self.rule == "llama":  # what Llama 3.x writes; the keyword rule reads it as text (§2.2)
            return _dumps({"name": tool_calls[0].name, "parameters": _args(tool_calls[0])})
        if self.rule == "hammer":
            return "```\n" + _dumps([{"name": c.name, "arguments": _args(c)} for c in tool_calls]) + "\n```"
        if self.rule == "xlam2":
            return _dumps([{"name": c.name, "arguments": _args(c)} for c in tool_calls])
        if self.rule == "pythonic":
            from wtb_local.benchmark.protocols.families import python_calls  # deferred: start-up

            return python_calls([{"function": {"name": c.name, "arguments": c.arguments}} for c in tool_calls])
        if self.rule == "fcm":
            return "".join(f"<function={c.name}>{c.arguments}</function>" for c in tool_calls)
        if self.rule == "gorilla":
            from wtb_local.benchmark.protocols.families import python_calls  # deferred: start-up

            return "".join("<<function>>" + python_calls([{"function": {"name": c.name, "arguments": c.arguments}}])[1:-1]
                           for c in tool_calls)
        return self._native().format(content, tool_calls, reasoning)

    def _native(self) -> ToolParser:
        """The family's parser of the native rule (the constructor refuses that rule without one)."""
        if self.native is None:
            raise RuntimeError(f"paper rule {self.rule!r} has no native parser")
        return self.native
