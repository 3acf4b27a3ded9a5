"""The date the paper harness gives the model (paper-harness.md §1.4).

The source is the Chinese `env_info` even for English runs: entries containing `星期` are cut before it,
the prefixes `当前时间：`/`环境：` are removed, and the English weekday is appended:
`2024-06-12 10:23:45 Wednesday`. The default placement is a system message `Current Date:<date>` (no
space after the colon); an existing system text is cut at its last `Current Date:` marker, which drops
its last character when there is none (`rfind` returns -1).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
DATE_MARKER = "Current Date:"
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


class DateError(ValueError):
    """The session carries no date the harness could read."""


def harness_dates(env_info: Any) -> list[str]:
    """`env_info` (a str or a list) -> the entries kept by the harness, cut before `星期` (§1.4)."""
    entries = [env_info] if isinstance(env_info, str) else list(env_info or [])
    return [entry[: entry.index("星期")].strip() for entry in entries
            if isinstance(entry, str) and "星期" in entry]


def add_weekday(stamp: str) -> str:
    """`当前时间：2024-06-12 10:23:45` -> `2024-06-12 10:23:45 Wednesday` (§1.4 `add_weekday_date`)."""
    text = stamp.replace("当前时间：", "").replace("环境：", "").strip()
    when = dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
    return f"{text} {WEEKDAYS[when.weekday()]}"


def task_dates(session: Any) -> tuple[list[str], str]:
    """Per task the date with weekday, and where it came from. A string `env_info` serves every task; a
    list gives one per task (§1.4). The harness silently ran fewer tasks when a list had fewer dated
    entries; here such tasks take the last dated entry, recorded as inferred."""
    count = len(getattr(session, "english_tasks", []) or [])
    extra = getattr(session, "model_extra", None) or {}
    env_info = extra.get("env_info")
    if isinstance(env_info, list):
        kept = harness_dates(env_info)
        if kept:
            dates = [add_weekday(kept[min(i, len(kept) - 1)]) for i in range(count)]
            if len(kept) >= count:
                return dates, "env_info per task (documented, paper-harness.md §1.4)"
            return dates, (f"env_info per task, {count - len(kept)} task(s) without a dated entry take the "
                           "last one (inferred: the harness dropped them)")
    date, source = session_date(session)
    return [date] * count, source


def session_date(session: Any) -> tuple[str, str]:
    """(date with weekday, where it came from). The Chinese `env_info` is documented (§1.4); a release
    file without it falls back to the timestamp in `english_env_info` with the weekday recomputed, which
    is recorded as inferred. Neither readable: DateError."""
    extra = getattr(session, "model_extra", None) or {}
    env_info = extra.get("env_info")
    if env_info is not None:
        kept = harness_dates(env_info)
        if kept:
            return add_weekday(kept[0]), "env_info (documented, paper-harness.md §1.4)"
    match = _STAMP.search(getattr(session, "english_env_info", "") or "")
    if match is None:
        raise DateError(f"{getattr(session, 'id', '?')}: field env_info/english_env_info: no "
                        "'YYYY-MM-DD HH:MM:SS' date; the paper protocol needs one")
    return add_weekday(match.group(0)), "english_env_info timestamp + recomputed weekday (inferred: env_info absent)"


def with_date(system_text: str | None, date: str) -> str:
    """`add_date_to_message` (§1.4): the system text cut at its last `Current Date:` marker (the last
    character lost when there is none), then `\\n\\nCurrent Date:<date>`, stripped; no text: the marker alone."""
    if system_text is None:
        return DATE_MARKER + date
    cut = system_text[: system_text.rfind(DATE_MARKER)]
    return (cut + "\n\n" + DATE_MARKER + date).strip()
