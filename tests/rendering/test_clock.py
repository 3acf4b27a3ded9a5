"""The template clock (wtb_local/formats/rendering/clock.py): a rendered prompt never depends on the day it runs,
on whatever transformers version is installed, and templates that read no clock render exactly as before."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.rendering.conftest import make_tokenizer, real_templates
from wtb_local.formats.rendering.clock import (
    DEFAULT_DATE,
    clock_fields,
    clocked_template,
    conversation_date,
    render_chat,
)
from wtb_local.formats.rendering.probe import PROBE_TOOLS, probe_messages
from wtb_local.formats.rendering.renderer import PromptRenderer

CLOCK_TEMPLATES = sorted(k for k, v in real_templates().items() if "strftime_now" in v["chat_template"])
OTHER_TEMPLATES = sorted(k for k, v in real_templates().items() if "strftime_now" not in v["chat_template"])
# Clock templates that print the day for a system + user or a user-only conversation (Llama 4's sets
# `date_string` and never prints it).
PRINTS_THE_DAY = [k for k in CLOCK_TEMPLATES if k != "meta-llama/Llama-4-Scout-17B-16E-Instruct"]
DAY_ONE, DAY_TWO = datetime(2031, 3, 4, 5, 6, 7), datetime(2040, 11, 29, 23, 58, 59)


def _dated(date: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": f"Current Date: {date}"}, *probe_messages()[1:]]


def _undated() -> list[dict[str, Any]]:
    return probe_messages()[1:]


@pytest.fixture
def fake_today(monkeypatch: pytest.MonkeyPatch):
    """Sets the day transformers' own `strftime_now` reads (its module's `datetime.now()`)."""
    from transformers.utils import chat_template_utils

    def set_day(when: datetime) -> None:
        class Frozen(datetime):
            @classmethod
            def now(cls, tz: Any = None) -> datetime:
                return when

        monkeypatch.setattr(chat_template_utils, "datetime", Frozen)

    return set_day


def test_the_clock_templates_are_the_known_ones() -> None:
    assert CLOCK_TEMPLATES == [
        "ibm-granite/granite-3.3-2b-instruct", "meta-llama/Llama-3.1-8B-Instruct::vllm",
        "meta-llama/Llama-3.2-3B-Instruct", "meta-llama/Llama-3.2-3B-Instruct::vllm-pythonic",
        "meta-llama/Llama-4-Scout-17B-16E-Instruct", "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
        "openai/gpt-oss-120b", "tencent/Hunyuan-A13B-Instruct::vllm"]


@pytest.mark.parametrize("key", CLOCK_TEMPLATES)
def test_a_rendered_prompt_does_not_depend_on_the_day(key: str, fake_today) -> None:
    template = real_templates()[key]["chat_template"]
    model_id = key.split("::", 1)[0]
    tokenizer = make_tokenizer(template, name=model_id)
    simple = [_dated("2025-01-08 10:00:00 Wednesday")[:2], _undated()[:1]]  # shapes every template takes

    def plain() -> list[str]:  # transformers' own clock: proves the faked day reaches this version's clock
        return [tokenizer.apply_chat_template(m, tools=PROBE_TOOLS, chat_template=template,
                                              add_generation_prompt=True, tokenize=False) for m in simple]

    def ours(renderer: PromptRenderer) -> list[str]:
        return [render_chat(tokenizer, template, m, PROBE_TOOLS) for m in simple] + [
            renderer.render_text(m, PROBE_TOOLS) for m in (_dated("2025-01-08 10:00:00 Wednesday"), _undated())]

    fake_today(DAY_ONE)
    plain_one = plain()
    renderer = PromptRenderer(tokenizer, model_id=model_id)
    first = ours(renderer)
    fake_today(DAY_TWO)
    # the faked day reaches this version's clock (a template may read it and not print it)
    assert (plain() != plain_one) == (key in PRINTS_THE_DAY)
    assert ours(renderer) == first
    again = PromptRenderer(tokenizer, model_id=model_id)  # the probe decides alike on another day
    assert again.choice == renderer.choice
    assert ours(again) == first


@pytest.mark.parametrize("key", OTHER_TEMPLATES)
def test_a_template_without_a_clock_renders_exactly_as_transformers_does(key: str) -> None:
    template = real_templates()[key]["chat_template"]
    tokenizer = make_tokenizer(template)
    messages = _dated("2025-01-08 10:00:00 Wednesday")[:2]
    try:
        want = tokenizer.apply_chat_template(messages, tools=PROBE_TOOLS, chat_template=template,
                                             add_generation_prompt=True, tokenize=False)
    except Exception as exc:  # noqa: BLE001
        with pytest.raises(type(exc)):
            render_chat(tokenizer, template, messages, PROBE_TOOLS)
        return
    assert render_chat(tokenizer, template, messages, PROBE_TOOLS) == want


def test_the_template_sees_the_conversation_date() -> None:
    llama = real_templates()["meta-llama/Llama-3.2-3B-Instruct"]["chat_template"]
    gpt_oss = real_templates()["openai/gpt-oss-120b"]["chat_template"]
    messages = _dated("2025-01-08 10:00:00 Wednesday")[:2]
    assert "Cutting Knowledge Date: December 2023\nToday Date: 08 Jan 2025\n\n" in render_chat(
        make_tokenizer(llama), llama, messages, PROBE_TOOLS)
    assert "Current date: 2025-01-08\n" in render_chat(make_tokenizer(gpt_oss), gpt_oss, messages, PROBE_TOOLS)
    assert "Today Date: 12 Jun 2024\n" in render_chat(make_tokenizer(llama), llama, _undated()[:1], PROBE_TOOLS)


def test_every_strftime_field_is_the_c_locale_one() -> None:
    template = "{{ strftime_now(format) }}"
    tokenizer = make_tokenizer(template)
    for when in (DAY_ONE, DAY_TWO, datetime(2024, 2, 29, 0, 0, 0)):
        fields = clock_fields(when)
        for code, value in fields.items():
            if "-" not in code and code not in ("%c", "%x", "%X", "%p", "%a", "%A", "%b", "%B", "%h"):
                assert when.strftime(code) == value, code
        formats = {"%d %b %Y": when.strftime("%d %b %Y"), "%A, %B %-d": f"{fields['%A']}, {fields['%B']} "
                   f"{when.day}", "%Y-%m-%d %H:%M:%S": str(when), "100%% %Q": "100% %Q", "tail %": "tail %"}
        for format_, want in formats.items():
            got = render_chat(tokenizer, template, [{"role": "user", "content": "x"}], None, when=when,
                              format=format_)
            assert got == want, format_
    assert clock_fields(datetime(2025, 1, 8, 13, 5, 9))["%c"] == "Wed Jan  8 13:05:09 2025"


def test_the_conversation_date_is_read_from_the_system_message() -> None:
    assert conversation_date(_dated("2025-01-08 10:00:00 Wednesday")) == datetime(2025, 1, 8, 10, 0, 0)
    assert conversation_date(_dated("2025-01-08 10:00 Wednesday")) == datetime(2025, 1, 8, 10, 0, 0)
    assert conversation_date(_dated("2025-01-08")) == datetime(2025, 1, 8)
    assert conversation_date(_dated("2025-02-30 10:00:00")) == DEFAULT_DATE
    assert conversation_date(_undated()) == DEFAULT_DATE
    assert conversation_date([{"role": "user", "content": "Current Date: 2025-01-08"}]) == DEFAULT_DATE


def test_the_clock_line_adds_no_text() -> None:
    tokenizer = make_tokenizer("\n\n  {{ messages[0].content }}\n")
    messages = [{"role": "user", "content": "hi"}]
    assert render_chat(tokenizer, "\n\n  {{ messages[0].content }}\n", messages, None) == \
        tokenizer.apply_chat_template(messages, tokenize=False)
    assert clocked_template("X").endswith("%}\nX") and clocked_template("X").count("\n") == 1
