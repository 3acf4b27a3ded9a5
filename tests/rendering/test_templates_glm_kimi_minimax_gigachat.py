"""The verbatim 2026 templates of GLM-4.7, GigaChat3/3.1, MiniMax-M3, Hy3, Laguna, Cohere2MoE and Kimi-K3
(tests/fixtures/rendering/2026/fam_a_templates.json, each with its source): the start-up probe's verdict with
the parser the template selects, the thinking mode each renders by default and with --thinking/--no-thinking,
and replies cut out of each template (the oracle's) reading back exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.rendering.conftest import make_tokenizer
from wtb_local.formats.parsers import get_parser, select_parser
from wtb_local.formats.rendering.adapt import Adaptation
from wtb_local.formats.rendering.renderer import PromptRenderer
from wtb_local.run.setup.parser_choice import prefills_reasoning
from wtb_local.run.setup.thinking import effective_thinking

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "rendering" / "2026" / "fam_a_templates.json"
TEMPLATES = json.loads(FIXTURE.read_text(encoding="utf-8"))
COHERE = "Cohere2MoE (llama.cpp Cohere2MoE.jinja, 'North Code')"

# template -> (the model id it is rendered for, the parser it selects, the adaptation the probe keeps,
#              effective thinking by default / with --thinking / with --no-thinking; None: no switch)
EXPECTED: dict[str, tuple[str, str, Adaptation, tuple[bool, bool | None, bool | None]]] = {
    "zai-org/GLM-4.7-Flash": ("zai-org/GLM-4.7-Flash", "glm47", Adaptation(), (True, True, False)),
    "ai-sage/GigaChat3-10B-A1.8B": ("ai-sage/GigaChat3-10B-A1.8B", "gigachat3", Adaptation(split_parallel=True),
                                    (False, None, None)),
    "ai-sage/GigaChat3.1-10B-A1.8B": ("ai-sage/GigaChat3.1-10B-A1.8B", "gigachat3",
                                      Adaptation(split_parallel=True), (False, None, None)),
    "MiniMaxAI/MiniMax-M3": ("MiniMaxAI/MiniMax-M3", "minimax_m3", Adaptation(), (True, True, False)),
    "tencent/Hy3": ("tencent/Hy3", "hy_v3", Adaptation(), (False, True, False)),
    "poolside/Laguna-XS.2": ("poolside/Laguna-XS.2", "poolside_v1", Adaptation(), (False, True, False)),
    "poolside/Laguna-XS-2.1": ("poolside/Laguna-XS-2.1", "poolside_v1", Adaptation(), (False, True, False)),
    "poolside/Laguna-S-2.1": ("poolside/Laguna-S-2.1", "poolside_v1", Adaptation(), (True, True, False)),
    COHERE: ("CohereLabs/north-mini-code", "cohere_command", Adaptation(), (True, True, False)),
    # rendered under a fine-tune's id: for Kimi-K3 itself the renderer kimi_k3 is used (test_renderers.py)
    "moonshotai/Kimi-K3": ("someone/k3-finetune", "kimi_k3", Adaptation(), (True, True, False)),
}
# The single-call templates: one call per assistant message, so the probe splits parallel calls.
SPLIT_PROBLEM = ("history turn 2 (probe_weather, probe_weather, probe_convert) reads back with parser gigachat3 "
                 'as probe_weather({"city": "Zanzibar-Q7", "days": 4817}), not probe_weather(')


def _renderer(key: str, **kwargs: Any) -> PromptRenderer:
    model = EXPECTED[key][0]
    return PromptRenderer(make_tokenizer(TEMPLATES[key]["chat_template"], name=model), model_id=model,
                          parser=EXPECTED[key][1] if model.startswith("someone/") else None, **kwargs)


def test_every_template_is_listed() -> None:
    assert sorted(TEMPLATES) == sorted(EXPECTED)


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_the_template_passes_the_probe(key: str) -> None:
    model, parser, adaptation, _ = EXPECTED[key]
    renderer = _renderer(key)
    choice = renderer.choice
    assert (choice.source, choice.adaptation) == ("tokenizer", adaptation)
    assert select_parser(model, chat_template=renderer.template) == parser
    if adaptation.split_parallel:
        assert choice.reason == "template cannot hold several calls in one message; parallel calls are split"
        assert len(choice.problems) == 4 and all(SPLIT_PROBLEM in p for p in choice.problems)
    else:
        assert (choice.reason, choice.problems) == ("default adaptation passed the probe", [])


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_thinking_modes(key: str) -> None:
    model, parser, _, modes = EXPECTED[key]
    for asked, want in zip((None, True, False), modes):
        if want is None:
            with pytest.raises(ValueError, match="has no thinking switch"):
                _renderer(key, thinking=asked)
            continue
        mode = effective_thinking(_renderer(key, thinking=asked), parser=parser, model_id=model, asked=asked)
        assert mode.effective is want, (asked, mode.evidence)


CALLS = [("probe_convert", {"amount": 12.75, "currency": "XKQD", "exact": True, "notes": ['say "hi"', "café"],
                            "route": {"via": ["EUR", "USD"], "hops": 2, "fee": 0.5}}),
         ("probe_weather", {"city": "São Paulo — 北京", "days": 0})]


@pytest.mark.parametrize("key", sorted(EXPECTED))
@pytest.mark.parametrize("count", [1, 2])
def test_a_reply_cut_from_the_template_reads_back(key: str, count: int) -> None:
    """The oracle's replies: the assistant turn cut out of the template's own rendering parses back exactly,
    content and reasoning empty. Single-call templates are asked for one call at a time."""
    from wtb_local.formats.rendering.probe import PROBE_TOOLS, probe_messages

    _model, parser, adaptation, _ = EXPECTED[key]
    if adaptation.split_parallel and count > 1:
        return
    renderer = _renderer(key)
    calls = [{"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
             for n, (name, args) in enumerate(CALLS[:count])]
    text = renderer.assistant_text(probe_messages()[:2], PROBE_TOOLS, {"content": "", "tool_calls": calls})
    assert text is not None
    # read as the run reads it: after a prompt that opens the reasoning block, the reply starts inside it
    reader = get_parser(parser, **({"thinking": True} if prefills_reasoning(renderer) else {}))
    result = reader.parse(text, tools=PROBE_TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == CALLS[:count], text
    assert (result.content, result.reasoning, result.errors) == (None, None, []), text
    answer = renderer.assistant_text(probe_messages()[:2], PROBE_TOOLS, {"content": "It is sunny."})
    assert reader.parse(answer or "").content == "It is sunny.", answer
