"""The 2026 templates of the Gemma 4, Qwen3.5, Nemotron 3, Granite 4, LFM2, Apertus, Step-3.5, MiniCPM5 and
Olmo 3 families: the start-up probe's verdict, the round trip of 1-3 calls through each, the thinking mode and
reasoning pre-fill each run gets, and the overrides three of them need.

The templates (tests/fixtures/rendering/2026/gemma-qwen35-olmo.json, each with its source: repository,
path, commit, and its kind) are llama.cpp's captures of the checkpoints' own templates, plus two copies
others wrote, as cross-checks: vLLM's Olmo 3 example (the only Olmo 3 prompt found) and llama.cpp's
interleaved-thinking Gemma 4 variant. The key is the model id a run passes (`::2026` marks a second
capture of a template the main fixture already holds, `::vllm` / `::interleaved` the copies).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from tests.rendering.conftest import OVERRIDES_DIR, make_tokenizer
from tests.rendering.test_round_trip import CASES, TOOLS, _history, _reply
from wtb_local.formats.parsers import get_parser, select_parser
from wtb_local.formats.rendering.adapt import Adaptation
from wtb_local.formats.rendering.probe import PROBE_TOOLS, check_rendered, probe_messages
from wtb_local.formats.rendering.renderer import PromptRenderer
from wtb_local.formats.rendering.templates import TemplateError, override_for, template_sha256

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "rendering" / "2026" / "gemma-qwen35-olmo.json"


@lru_cache(maxsize=1)
def templates() -> dict[str, dict[str, Any]]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


JSON_ARGS = Adaptation(arguments="json")
# key -> (template the probe chooses, adaptation, parser selected from that template and the model id)
EXPECTED: dict[str, tuple[str, Adaptation, str]] = {
    "LiquidAI/LFM2-8B-A1B": ("override:lfm2", Adaptation(), "lfm2"),
    "allenai/Olmo-3-7B-Instruct::vllm": ("tokenizer", Adaptation(), "olmo3"),
    "google/gemma-4-31B-it::interleaved": ("tokenizer", Adaptation(), "gemma4"),
    "LiquidAI/LFM2.5-1.2B-Instruct": ("override:lfm2_5", Adaptation(), "lfm2"),
    "LiquidAI/LFM2.5-8B-A1B": ("tokenizer", Adaptation(), "lfm2"),
    "Qwen/Qwen3.5-4B": ("tokenizer", Adaptation(), "qwen3_coder"),
    "google/gemma-4-31B-it": ("tokenizer", Adaptation(), "gemma4"),
    "ibm-granite/granite-4.0::2026": ("tokenizer", Adaptation(), "granite4"),
    "ibm-granite/granite-4.1": ("tokenizer", Adaptation(), "granite4"),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ("tokenizer", Adaptation(), "qwen3_coder"),
    "openbmb/MiniCPM5-1B": ("tokenizer", Adaptation(), "minicpm5"),
    "stepfun-ai/Step-3.5-Flash": ("tokenizer", Adaptation(), "step3p5"),
    "swiss-ai/Apertus-8B-Instruct-2509": ("override:apertus", JSON_ARGS, "apertus"),
}
# What the shipped template of each overridden family gets wrong (found in the probe's problems).
SYMPTOMS = {
    "LiquidAI/LFM2-8B-A1B": "reads back with parser lfm2 as no calls",
    "LiquidAI/LFM2.5-1.2B-Instruct": "reads back with parser lfm2 as no calls",
    "swiss-ai/Apertus-8B-Instruct-2509": "raised UndefinedError: 'dict object' has no attribute 'description'",
}
# Templates that write a null argument as Python `None` (`|string`) for a string-or-null parameter, as
# Qwen3-Coder's does (test_round_trip.py's XFAIL says why the probe leaves null out).
NONE_AS_TEXT = {"Qwen/Qwen3.5-4B", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "stepfun-ai/Step-3.5-Flash",
                "openbmb/MiniCPM5-1B"}


def renderer(key: str, **kwargs: Any) -> PromptRenderer:
    model_id = key.split("::", 1)[0]
    return PromptRenderer(make_tokenizer(templates()[key]["chat_template"], name=model_id), model_id=model_id,
                          **kwargs)


def test_every_template_is_expected() -> None:
    assert sorted(templates()) == sorted(EXPECTED)


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_probe_verdict(key: str) -> None:
    source, adaptation, parser = EXPECTED[key]
    r = renderer(key)
    assert (r.choice.source, r.choice.adaptation) == (source, adaptation)
    assert select_parser(key.split("::", 1)[0], chat_template=r.template) == parser
    if source == "tokenizer":
        assert r.choice.problems == [] and r.choice.sha256 == template_sha256(templates()[key]["chat_template"])
    else:
        name = source.removeprefix("override:")
        assert r.choice.sha256 == template_sha256((OVERRIDES_DIR / f"{name}.jinja").read_text(encoding="utf-8"))
        shipped = [p for p in r.choice.problems if p.startswith("tokenizer [")]
        assert len(shipped) == 4 and any(SYMPTOMS[key] in p for p in shipped), r.choice.problems
        # the override's own rejected variants come before the one chosen (Apertus: dict arguments)
        assert all(p.startswith(f"{source} [arguments=dict") for p in r.choice.problems if p not in shipped)
        assert check_rendered(r.render_text(probe_messages(), PROBE_TOOLS)) == []


def _round_trip_params() -> list[Any]:
    params = []
    for key in sorted(EXPECTED):
        for case in CASES:
            marks = []
            if key in NONE_AS_TEXT and case == "one_call_all_types":
                marks = [pytest.mark.xfail(strict=True, reason="the template writes a null argument as Python "
                                                               "'None', kept as the string for a string-or-null parameter")]
            params.append(pytest.param(key, case, id=f"{key}-{case}", marks=marks))
    return params


@pytest.mark.parametrize(("key", "case"), _round_trip_params())
def test_round_trip(key: str, case: str) -> None:
    r = renderer(key)
    completion = r.assistant_text(_history(), TOOLS, _reply(case))
    assert completion is not None, f"{key}: no clean cut of the assistant turn ({r.choice.source})"
    parsed = get_parser(EXPECTED[key][2]).parse(completion, tools=TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == list(CASES[case]), completion
    assert parsed.errors == []


# key -> (the parser options a run gets, the effective thinking mode) with no --thinking; then with
# --thinking and --no-thinking where the template has a switch.
THINKING: dict[str, tuple[dict[str, Any], bool]] = {
    "LiquidAI/LFM2-8B-A1B": ({}, False),
    "LiquidAI/LFM2.5-1.2B-Instruct": ({}, False),
    "LiquidAI/LFM2.5-8B-A1B": ({}, False),
    "allenai/Olmo-3-7B-Instruct::vllm": ({}, False),
    "google/gemma-4-31B-it::interleaved": ({}, False),
    "Qwen/Qwen3.5-4B": ({"thinking": "per-step"}, True),
    "google/gemma-4-31B-it": ({}, False),
    "ibm-granite/granite-4.0::2026": ({}, False),
    "ibm-granite/granite-4.1": ({}, False),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ({"thinking": "per-step"}, True),
    "openbmb/MiniCPM5-1B": ({}, False),
    "stepfun-ai/Step-3.5-Flash": ({"thinking": "per-step"}, True),
    "swiss-ai/Apertus-8B-Instruct-2509": ({}, False),
}
SWITCHED: dict[str, tuple[bool, dict[str, Any]]] = {
    "Qwen/Qwen3.5-4B": (True, {"thinking": "per-step"}),
    "google/gemma-4-31B-it": (True, {}),
    "google/gemma-4-31B-it::interleaved": (True, {}),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": (True, {"thinking": "per-step"}),
    "openbmb/MiniCPM5-1B": (True, {"thinking": "per-step"}),
    "swiss-ai/Apertus-8B-Instruct-2509": (True, {}),
}


def _mode(key: str, thinking: bool | None) -> tuple[dict[str, Any], bool | None, str]:
    from wtb_local.run.setup.parser_choice import choose_parser
    from wtb_local.run.setup.thinking import effective_thinking

    model_id = key.split("::", 1)[0]
    r = renderer(key, thinking=thinking)
    parser, options = choose_parser(None, model=model_id, renderer=r)
    mode = effective_thinking(r, parser=parser.name, model_id=model_id, asked=thinking)
    return options, mode.effective, mode.evidence


@pytest.mark.parametrize("key", sorted(THINKING))
def test_thinking_mode_and_prefill(key: str) -> None:
    options, effective, _ = _mode(key, None)
    assert (options, effective) == THINKING[key]
    if key in SWITCHED:
        on_effective, on_options = SWITCHED[key]
        assert _mode(key, True)[:2] == (on_options, on_effective)
        assert _mode(key, False)[:2] == ({}, False)
    else:
        with pytest.raises(ValueError, match="has no thinking switch"):
            renderer(key, thinking=True)


def test_gemma4_thinking_evidence() -> None:
    # thinking off is Gemma 4's empty thought channel at the end of the generation prompt
    assert _mode("google/gemma-4-31B-it", None)[2].startswith("the generation prompt closes an empty reasoning block")
    assert _mode("google/gemma-4-31B-it", True)[2] == ("the generation prompt is the one the template renders "
                                                       "with enable_thinking=true")


def test_gemma4_continues_the_model_turn_after_tool_results() -> None:
    # the template writes results inside the model turn and adds no header after them: the completion
    # after tool results is the turn's continuation, cut and parsed like any other
    r = renderer("google/gemma-4-31B-it")
    history = _history()[:4]
    prompt = r.render_text(history, TOOLS)
    assert prompt.endswith("<|tool_response>response:get_weather{value:<|\"|>\"sunny, 24C\"<|\"|>}<tool_response|>")
    completion = r.assistant_text(history, TOOLS, {"content": "It is sunny.", "tool_calls": []})
    assert completion == "It is sunny."


@pytest.mark.parametrize(("model_id", "name"), [
    ("swiss-ai/Apertus-8B-Instruct-2509", "apertus"), ("LiquidAI/LFM2-8B-A1B", "lfm2"),
    ("LiquidAI/LFM2.5-1.2B-Instruct", "lfm2_5")])
def test_override_serves_its_family(model_id: str, name: str) -> None:
    assert override_for(model_id).name == name


def test_shipped_lfm2_template_without_override_is_refused() -> None:
    text = templates()["LiquidAI/LFM2-8B-A1B"]["chat_template"]
    with pytest.raises(TemplateError, match="reads back with parser lfm2 as no calls"):
        PromptRenderer(make_tokenizer(text, name="someone/lfm2-finetune"), model_id="someone/lfm2-finetune",
                       parser="lfm2")


@pytest.mark.parametrize(("model_id", "switch"), [
    ("google/gemma-4-31B-it", "enable_thinking"), ("Qwen/Qwen3.6-35B-A3B", "enable_thinking"),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "enable_thinking"),
    ("swiss-ai/Apertus-8B-Instruct-2509", "enable_thinking"), ("openbmb/MiniCPM5-1B", "enable_thinking"),
    ("LiquidAI/LFM2-8B-A1B", None), ("stepfun-ai/Step-3.5-Flash", None)])
def test_thinking_switch_by_model_id(model_id: str, switch: str | None) -> None:
    from wtb_local.formats.rendering.kwargs import thinking_switch

    # without a template to read (a hub id not downloaded yet), the family's switch
    assert thinking_switch(model_id, None) == switch


def test_a_message_field_named_thinking_is_no_switch() -> None:
    # LFM2.5-8B-A1B's template reads `message.thinking`, a message field, not a template variable
    from wtb_local.formats.rendering.kwargs import thinking_switch

    assert thinking_switch("LiquidAI/LFM2.5-8B-A1B", templates()["LiquidAI/LFM2.5-8B-A1B"]["chat_template"]) is None
    assert thinking_switch("x/y", "{% if thinking is defined and thinking %}") == "thinking"
