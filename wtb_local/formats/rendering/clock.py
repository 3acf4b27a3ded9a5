"""The clock a chat template reads: the conversation's own date, never the day the prompt is rendered.

Templates print "today" through transformers' `strftime_now(format)` global (Llama 3.x and 4, gpt-oss,
Mistral Small 3.2, Hunyuan, Granite 3.3). A prompt that changes with the day is not byte-stable: reruns,
prefix caching and the probe's cuts (several renderings of one conversation compared) all break on it.
Older transformers let a caller shadow the global with a render argument; newer ones (5.24) turn every
render argument into plain data first, so a function arrives as a string. The clock is therefore defined
inside the template: a macro named `strftime_now`, placed before the template's text, formats the
conversation's date from a table of strftime fields passed as plain data (`clock_fields`). It works the
same on every transformers version (docs/install.md §4).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from wtb_local.contract.messages import ChatMessage, FunctionSchema, ToolSchema

# The render argument that carries the frozen date's strftime fields (plain strings only).
CLOCK_ARGUMENT = "wtb_clock"

# A conversation without a `Current Date:` system message (the evaluator always sends one:
# docs/evaluation.md §3) reads this fixed date: still never the day it runs.
DEFAULT_DATE = datetime(2024, 6, 12, 10, 23, 45)

_CURRENT_DATE = re.compile(r"Current Date:\s*(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2}(?::\d{2})?))?")

# One line of template code; the newline after it is removed by the `trim_blocks` option that
# transformers' environment sets, so the template's own text renders exactly as before.
_MACRO = (
    "{%- macro strftime_now(format) -%}"
    "{%- set wtb_ns = namespace(text='', code='') -%}"
    "{%- for char in format -%}"
    "{%- if wtb_ns.code == '%' and char == '-' -%}{%- set wtb_ns.code = '%-' -%}"
    "{%- elif wtb_ns.code -%}"
    "{%- set wtb_ns.text = wtb_ns.text ~ " + CLOCK_ARGUMENT + ".get(wtb_ns.code ~ char, wtb_ns.code ~ char) -%}"
    "{%- set wtb_ns.code = '' -%}"
    "{%- elif char == '%' -%}{%- set wtb_ns.code = '%' -%}"
    "{%- else -%}{%- set wtb_ns.text = wtb_ns.text ~ char -%}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{{- wtb_ns.text ~ wtb_ns.code -}}"
    "{%- endmacro %}\n"
)

# C-locale names, whatever the machine's locale (a template that maps weekday names, as Hunyuan's does,
# needs the English ones).
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
# Locale-free numeric fields, formatted by Python itself.
_NUMERIC = "dHIjmMSUwWyYfGuV"


def conversation_date(messages: list[ChatMessage]) -> datetime:
    """The date of the conversation's `Current Date: YYYY-MM-DD[ HH:MM[:SS]]` system message, else
    DEFAULT_DATE."""
    for message in messages:
        if message.get("role") != "system" or not isinstance(message.get("content"), str):
            continue
        found = _CURRENT_DATE.search(message["content"])
        if found:
            clock = (found.group(2) or "00:00:00").split(":")
            try:
                return datetime.fromisoformat(found.group(1)).replace(
                    hour=int(clock[0]), minute=int(clock[1]), second=int(clock[2]) if len(clock) > 2 else 0)
            except ValueError:  # 2025-02-30: not a date; the fixed one is used
                return DEFAULT_DATE
    return DEFAULT_DATE


def clock_fields(when: datetime) -> dict[str, str]:
    """Every strftime field of `when` as the C locale writes it (with glibc's `%-d` unpadded forms), for
    the in-template `strftime_now`."""
    day, month = _DAYS[when.weekday()], _MONTHS[when.month - 1]
    fields = {f"%{code}": when.strftime(f"%{code}") for code in _NUMERIC}
    fields.update({
        "%a": day[:3], "%A": day, "%b": month[:3], "%h": month[:3], "%B": month,
        "%p": "AM" if when.hour < 12 else "PM", "%e": f"{when.day:2d}", "%z": "", "%Z": "", "%%": "%",
        "%n": "\n", "%t": "\t", "%F": when.strftime("%Y-%m-%d"), "%T": when.strftime("%H:%M:%S"),
        "%D": when.strftime("%m/%d/%y"), "%R": when.strftime("%H:%M"), "%x": when.strftime("%m/%d/%y"),
        "%X": when.strftime("%H:%M:%S"), "%C": f"{when.year // 100:02d}",
    })
    fields["%c"] = f"{day[:3]} {month[:3]} {when.day:2d} {fields['%T']} {when.year}"
    for code in "dmHIMSjy":
        fields[f"%-{code}"] = str(int(fields[f"%{code}"]))
    return fields


@lru_cache(maxsize=256)
def frozen_clock(when: datetime) -> dict[str, str]:
    """`clock_fields(when)`, computed once per date (a run's sessions share a few dates); read-only."""
    return clock_fields(when)


def clocked_template(template: str) -> str:
    """The template with the frozen `strftime_now` defined before its text."""
    return _MACRO + template


def render_chat(tokenizer: Any, template: str, messages: list[ChatMessage],
                tools: Sequence[ToolSchema | FunctionSchema] | None, *, add_generation_prompt: bool = True,
                when: datetime | None = None, **template_kwargs: Any) -> str:
    """`tokenizer.apply_chat_template` as text, with the clock frozen at `when` (default: the date of
    `messages`). Every chat-template rendering of wtb_local goes through here."""
    fields = frozen_clock(when or conversation_date(messages))
    return tokenizer.apply_chat_template(
        messages, tools=tools or None, chat_template=clocked_template(template),
        add_generation_prompt=add_generation_prompt, tokenize=False,
        **{**template_kwargs, CLOCK_ARGUMENT: fields})
