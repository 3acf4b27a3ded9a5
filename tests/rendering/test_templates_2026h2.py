"""The verbatim GigaChat 3.5 template (tests/fixtures/rendering/2026h2/gigachat35.json, llama.cpp's copy with its
source): it selects the gigachat35 parser, passes the start-up probe with the default adaptation (parallel
calls in one message), and the assistant turns cut out of its own rendering (the oracle's replies) read back
exactly with that parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.rendering.conftest import make_tokenizer
from wtb_local.formats.parsers import get_parser, select_parser
from wtb_local.formats.rendering.adapt import Adaptation
from wtb_local.formats.rendering.renderer import PromptRenderer
from wtb_local.run.setup.parser_choice import prefills_reasoning
from wtb_local.run.setup.thinking import effective_thinking

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "rendering" / "2026h2" / "gigachat35.json"
TEMPLATES = json.loads(FIXTURE.read_text(encoding="utf-8"))
MODEL = "ai-sage/GigaChat3.5-432B-A28B"


def _renderer(**kwargs: object) -> PromptRenderer:
    return PromptRenderer(make_tokenizer(TEMPLATES[MODEL]["chat_template"], name=MODEL), model_id=MODEL, **kwargs)


def test_the_template_selects_gigachat35_and_passes_the_probe() -> None:
    renderer = _renderer()
    choice = renderer.choice
    assert (choice.source, choice.adaptation, choice.reason, choice.problems) == (
        "tokenizer", Adaptation(), "default adaptation passed the probe", [])
    assert select_parser(MODEL, chat_template=renderer.template) == "gigachat35"
    assert select_parser("some/finetune", chat_template=renderer.template) == "gigachat35"


# effective thinking by default / with --thinking / with --no-thinking: off unless asked (`reasoning` switch;
# on, the generation prompt pre-fills <think>)
THINKING = [False, True, False]


def test_thinking_mode() -> None:
    modes = [effective_thinking(_renderer(thinking=asked), parser="gigachat35", model_id=MODEL, asked=asked).effective
             for asked in (None, True, False)]
    assert modes == THINKING


CALLS = [("probe_convert", {"amount": 12.75, "currency": "XKQD", "exact": True, "notes": ['say "hi"', "café"],
                            "route": {"via": ["EUR", "USD"], "hops": 2, "fee": 0.5}}),
         ("probe_weather", {"city": "São Paulo — 北京", "days": 0})]


@pytest.mark.parametrize("count", [1, 2])
def test_a_reply_cut_from_the_template_reads_back(count: int) -> None:
    from wtb_local.formats.rendering.probe import PROBE_TOOLS, probe_messages

    renderer = _renderer()
    calls = [{"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
             for n, (name, args) in enumerate(CALLS[:count])]
    text = renderer.assistant_text(probe_messages()[:2], PROBE_TOOLS, {"content": "", "tool_calls": calls})
    assert text is not None and text.startswith("<｜GCML｜tool_calls>\n<｜GCML｜invoke name=")
    reader = get_parser("gigachat35", **({"thinking": True} if prefills_reasoning(renderer) else {}))
    result = reader.parse(text, tools=PROBE_TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == CALLS[:count], text
    assert (result.content, result.reasoning, result.errors) == (None, None, []), text
    answer = renderer.assistant_text(probe_messages()[:2], PROBE_TOOLS, {"content": "It is sunny."})
    assert reader.parse(answer or "").content == "It is sunny.", answer
