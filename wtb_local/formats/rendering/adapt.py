"""Reshape an OpenAI-shaped conversation into what one chat template needs, deterministically.

Templates disagree on details the OpenAI shape leaves open (docs/parsers-and-templates.md, "Message
adaptations"): arguments as a dict or as JSON text, an assistant's `content` as `""` or `None`, the shape
of call ids, and whether an assistant message may hold several calls. An `Adaptation` names one combination;
`adapt_messages` applies it without ever dropping history and without mutating its input.
"""

from __future__ import annotations

import copy
import hashlib
import json
import string
from collections.abc import Callable
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict

from wtb_local.contract.messages import CallFunction, ChatMessage, ToolCall

IdStyle = Literal["keep", "mistral", "kimi"]

_ALNUM = string.ascii_letters + string.digits


class Adaptation(BaseModel):
    """One way of presenting history to a template."""

    model_config = ConfigDict(frozen=True)

    arguments: Literal["dict", "json"] = "dict"  # tool_calls[*].function.arguments
    content: Literal["empty", "none"] = "empty"  # content of an assistant message that carries calls
    ids: IdStyle = "keep"  # tool-call id shape (Mistral: 9 alphanumerics; Kimi: functions.NAME:IDX)
    split_parallel: bool = False  # one call per assistant message, each followed by its own result

    def label(self) -> str:
        text = f"arguments={self.arguments},content={self.content},ids={self.ids}"
        return text + (",split_parallel" if self.split_parallel else "")


def mistral_id(original: str) -> str:
    """Exactly nine characters of [A-Za-z0-9], derived with sha256 from the original id (stable)."""
    digest = hashlib.sha256(original.encode("utf-8")).digest()
    return "".join(_ALNUM[b % len(_ALNUM)] for b in digest[:9])


def adapt_messages(messages: list[ChatMessage], adaptation: Adaptation) -> list[ChatMessage]:
    """A new message list shaped by `adaptation`; the input is left untouched."""
    ids = _id_map(messages, adaptation.ids)
    out = [_adapt_one(message, adaptation, ids) for message in messages]
    return _split_parallel(out) if adaptation.split_parallel else out


class GrowingAdapter:
    """`adapt_messages` for conversations that only grow and whose message dicts never change once appended
    (Episode.conversation; a render worker's copies): each message is reshaped once, not at every step
    (docs/runner-speed.md §2). A message's reshaping depends on itself and on the reshaped ids of its own
    calls or result; it is reused only for the very same dict with the same ids. The reshaped dicts are
    shared between renderings, and share plain values and call arguments with the messages they come
    from: templates render in an immutable sandbox and transformers' message steps build new dicts, so
    nothing changes them."""

    LIMIT = 65536  # remembered messages; emptied when full

    def __init__(self, adaptation: Adaptation) -> None:
        self.adaptation = adaptation
        self._memo: dict[int, tuple[ChatMessage, Any, ChatMessage]] = {}

    def __call__(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        adaptation, memo = self.adaptation, self._memo
        ids = _id_map(messages, adaptation.ids)
        out: list[ChatMessage] = []
        for message in messages:
            used = _ids_used(message, ids) if ids else None
            known = memo.get(id(message))
            if known is None or known[0] is not message or known[1] != used:
                if len(memo) >= self.LIMIT:
                    memo.clear()
                known = memo[id(message)] = (message, used, _adapt_one(message, adaptation, ids, _light_copy))
            out.append(known[2])
        return _split_parallel(out) if adaptation.split_parallel else out


def _ids_used(message: ChatMessage, ids: dict[Any, str]) -> Any:
    if message.get("role") == "tool":
        return ids.get(message.get("tool_call_id"))
    return tuple(ids.get(call.get("id")) for call in message.get("tool_calls") or ())


def _light_copy(message: ChatMessage) -> ChatMessage:
    """A new dict whose plain values (text, numbers, None) and call list are the message's own: enough
    where neither the message nor its reshaping is ever changed (GrowingAdapter); `tool_calls` is
    rebuilt by the reshaping, anything else nested is copied."""
    return cast(ChatMessage, {key: value if key == "tool_calls" or isinstance(value, _PLAIN) else copy.deepcopy(value)
                              for key, value in message.items()})


_PLAIN = (str, int, float, bool, type(None))


def _adapt_one(message: ChatMessage, adaptation: Adaptation, ids: dict[str, str],
               copier: Callable[[ChatMessage], ChatMessage] = copy.deepcopy) -> ChatMessage:
    message = copier(message)
    if message.get("role") == "assistant" and message.get("tool_calls"):
        message["tool_calls"] = [_adapt_call(call, adaptation, ids) for call in message["tool_calls"]]
        if adaptation.content == "none" and not message.get("content"):
            message["content"] = None
        elif message.get("content") is None:
            message["content"] = ""
    elif message.get("role") == "tool" and message.get("tool_call_id") is not None:
        message["tool_call_id"] = ids.get(message["tool_call_id"], message["tool_call_id"])
    return message


def _adapt_call(call: ToolCall, adaptation: Adaptation, ids: dict[str, str]) -> ToolCall:
    function = cast(CallFunction, dict(call.get("function") or {}))
    function["arguments"] = _arguments(function.get("arguments"), adaptation.arguments)
    call = {**call, "function": function}
    call.setdefault("type", "function")
    if call.get("id") is not None:
        call["id"] = ids.get(call["id"], call["id"])
    return call


def _arguments(value: Any, shape: str) -> Any:
    if shape == "json":
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            return value  # unparsable text stays as written: never lose what the model said
        # Only objects become dicts; a template iterating `.items()` needs a mapping.
        return decoded if isinstance(decoded, dict) else value
    return value


def _id_map(messages: list[ChatMessage], style: IdStyle) -> dict[str, str]:
    """Original id -> reshaped id, so calls and their tool results stay paired."""
    mapping: dict[str, str] = {}
    if style == "keep":
        return mapping
    index = 0
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            original = call.get("id")
            if original is None or original in mapping:
                continue
            if style == "mistral":
                mapping[original] = mistral_id(original)
            else:
                name = (call.get("function") or {}).get("name", "")
                mapping[original] = f"functions.{name}:{index}"
                index += 1  # Kimi-K2 numbers calls over the whole conversation
    return mapping


def _split_parallel(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Turn assistant(c1..cn) + tool(r1..rn) into assistant(c1) tool(r1) ... assistant(cn) tool(rn).

    Results are paired with calls by `tool_call_id` when present, else by position; results that match no
    call stay after the last pair, so nothing is dropped.
    """
    out: list[ChatMessage] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        calls = message.get("tool_calls") or [] if message.get("role") == "assistant" else []
        if len(calls) < 2:
            out.append(message)
            i += 1
            continue
        j = i + 1
        while j < len(messages) and messages[j].get("role") == "tool":
            j += 1
        results = messages[i + 1:j]
        paired = _pair_results(calls, results)
        for k, call in enumerate(calls):
            # Any text the message had belongs before its first call.
            out.append({**message, "content": message.get("content") if k == 0 else _empty(message),
                        "tool_calls": [call]})
            out.extend(paired[k])
        out.extend(paired[len(calls)])
        i = j
    return out


def _empty(message: ChatMessage) -> str | None:
    return None if message.get("content") is None else ""


def _pair_results(calls: list[ToolCall],
                  results: list[ChatMessage]) -> list[list[ChatMessage]]:
    groups: list[list[ChatMessage]] = [[] for _ in range(len(calls) + 1)]
    by_id = {call.get("id"): k for k, call in enumerate(calls) if call.get("id") is not None}
    used: set[int] = set()
    for position, result in enumerate(results):
        k = by_id.get(result.get("tool_call_id"))
        if k is None and result.get("tool_call_id") is None and position < len(calls) and position not in used:
            k = position
        if k is None:
            groups[len(calls)].append(result)
        else:
            groups[k].append(result)
            used.add(k)
    return groups
