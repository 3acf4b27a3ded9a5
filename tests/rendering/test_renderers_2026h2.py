"""Prompts of the second-half-2026 families vLLM renders in Python or ships a template for: Inkling's renderer
(chat_templates/inkling.jinja) written out exactly; it and the DeepSeek V3.2, V4 and V4.1 renderers held byte for byte against
the prompts vLLM 0.34's own encoders write (tests/fixtures/rendering/2026h2/vllm034_prompts.json, recorded by
scripts/vllm034_prompts.py); Muse Glimmer's published template (vLLM's example) through the probe with the
parser it selects; K2 Horizon's template arguments reaching its parser.

The encoders are pure Python files of an unpacked vLLM 0.34 wheel (`WTB_VLLM_NEXT`, as .ci/run's vllm_next tier
sets it, or `WTB_VLLM034_DIR`); only the check that the recorded prompts are still theirs needs it. It is a vLLM
test: it runs in that tier, skips elsewhere without the wheel or mistral_common, and fails in CI without them."""

from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest

from tests.rendering.conftest import OVERRIDES_DIR, make_tokenizer
from wtb_local.formats.parsers import select_parser
from wtb_local.formats.rendering.adapt import Adaptation, adapt_messages
from wtb_local.formats.rendering.clock import render_chat
from wtb_local.formats.rendering.probe import PROBE_TOOLS, probe_messages
from wtb_local.formats.rendering.renderer import PromptRenderer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rendering" / "2026h2"
# The newest release's layer as CI unpacks it, else a folder a developer names; no default (a path of one machine).
VLLM034 = Path(os.environ.get("WTB_VLLM_NEXT") or os.environ.get("WTB_VLLM034_DIR") or "/nonexistent")
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


def _absent(why: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(why)
    pytest.skip(why)


def _vllm034(relative: str) -> ModuleType:
    path = VLLM034 / "vllm" / relative
    if not path.is_file():
        _absent(f"vLLM 0.34's {relative} is not at {path} (set WTB_VLLM_NEXT to an unpacked vLLM 0.34 wheel)")
    spec = importlib.util.spec_from_file_location(f"vllm034_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _probe() -> list[dict[str, Any]]:
    """The probe conversation with arguments as mappings, as the probe passes them to these renderers."""
    return adapt_messages(probe_messages(), Adaptation())


def _render(name: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, **kwargs: Any) -> str:
    text = (OVERRIDES_DIR / f"{name}.jinja").read_text(encoding="utf-8")
    return render_chat(make_tokenizer(None), text, messages, tools, add_generation_prompt=True, **kwargs)


def _conversation() -> list[dict[str, Any]]:
    return [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "Checking.", "reasoning_content": "need the weather",
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "get_weather", "arguments": {"city": "Paris", "b": {"z": 1, "a": 2}}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "Thanks"}]


# --- Inkling ---------------------------------------------------------------------------------------------

M, T, E = "<|message_model|>", "<|content_text|>", "<|end_message|>"


def test_inkling_layout() -> None:
    """What vLLM's Inkling encoder writes, spelled out: tools as sorted compact JSON in a tool_declare system
    message, role and content-kind tokens, one message per call, the end-sampling token after every assistant
    turn, `<|message_model|>` as the generation prompt; the effort line before the first non-system message."""
    tools = ('<|message_system|>tool_declare<|unused_200024|>[{"description":"Weather.","name":"get_weather",'
             '"parameters":{"properties":{"city":{"type":"string"}},"type":"object"},"type":"function"}]' + E)
    turns = (f"<|message_user|>{T}Weather in Paris?{E}{M}<|content_thinking|>need the weather{E}{M}{T}Checking.{E}"
             f'{M}get_weather<|content_invoke_tool_json|>{{"name":"get_weather","args":{{"b":{{"a":2,"z":1}},'
             f'"city":"Paris"}}}}{E}<|content_model_end_sampling|><|message_tool|>get_weather{T}sunny{E}'
             f"{M}{T}Sunny.{E}<|content_model_end_sampling|><|message_user|>{T}Thanks{E}{M}")
    system = f"<|message_system|>{T}Be brief.{E}"
    assert _render("inkling", _conversation(), TOOLS) == tools + system + turns
    effort = f"<|message_system|>{T}Thinking effort level: 0.5{E}"
    assert _render("inkling", _conversation(), TOOLS, reasoning_effort=0.5) == tools + system + effort + turns
    assert f"{T}Thinking effort level: 0.0{E}" in _render("inkling", _conversation(), None, reasoning_effort=0)
    with pytest.raises(Exception, match=r"must be in \[0.0, 0.99\]"):
        _render("inkling", _conversation(), TOOLS, reasoning_effort=1.5)


def test_inkling_renderer_serves_the_model_and_passes_the_probe() -> None:
    renderer = PromptRenderer(make_tokenizer(None, name="thinkingmachines/Inkling-Small"),
                              model_id="thinkingmachines/Inkling-Small")
    assert (renderer.choice.source, renderer.choice.problems) == ("renderer:inkling", [])
    assert select_parser("thinkingmachines/Inkling-Small", chat_template=renderer.template) == "inkling"


# --- held against vLLM 0.34's encoders (Inkling, DeepSeek V3.2, V4, V4.1) ----------------------------------

PROMPTS = json.loads((FIXTURES / "vllm034_prompts.json").read_text(encoding="utf-8"))


MISTRAL_TEMPLATE = json.loads((FIXTURES.parent / "chat_templates.json").read_text(encoding="utf-8"))[
    "mistralai/Mistral-Nemo-Instruct-2407"]["chat_template"]
RESULT = '[TOOL_RESULTS]{"content": sunny, "call_id": "w8XqDHSH7"}'
QUOTED = ("Mistral-Nemo's shipped template writes a result's text into its JSON unquoted; mistral_common quotes "
          "text that is not JSON")
SYSTEM = ("Mistral-Nemo's shipped template puts the system text before the last user message only when that "
          "message ends the conversation (`loop.last`), and drops it otherwise; mistral_common puts it before the "
          "last user message always")
# Each named difference between our prompt and vLLM 0.34's for a case: (ours, theirs, cause). A case not named
# here is byte-identical; a named difference that is gone fails too.
DIFFERENCES: dict[str, list[tuple[str, str, str]]] = {
    "mistral/conversation": [(RESULT, RESULT.replace("sunny", '"sunny"'), QUOTED)],
    "mistral/no-tools": [(RESULT, RESULT.replace("sunny", '"sunny"'), QUOTED)],
    "mistral/pending": [
        ("[INST]Weather", "[INST]Be brief.\n\nWeather", SYSTEM),
        (RESULT, RESULT.replace("sunny", '"sunny"'), QUOTED)],
}


def _ours(case: dict[str, Any]) -> str:
    if case["renderer"] == "mistral":  # a Mistral model is rendered with its tokenizer's own template
        return render_chat(make_tokenizer(None), MISTRAL_TEMPLATE, case["messages"], case["tools"],
                           add_generation_prompt=True)
    return _render(case["renderer"], case["messages"], case["tools"], **case["kwargs"])


def test_every_named_difference_is_a_recorded_case() -> None:
    assert set(DIFFERENCES) <= {c["case"] for c in PROMPTS["cases"]}


@pytest.mark.parametrize("case", PROMPTS["cases"], ids=[c["case"] for c in PROMPTS["cases"]])
def test_renderers_write_vllm_034s_prompts(case: dict[str, Any]) -> None:
    """Byte for byte the prompt vLLM 0.34's own encoder renders for the same input (the probe conversation;
    reasoning, text beside a call, its result; efforts; thinking off), recorded by scripts/vllm034_prompts.py.
    DeepSeek V4.1's effort budgets are 0.34's (low 50, high 75 by default, max 100); V4's efforts map as its
    wrapper maps them (high's preamble by default, max's own); V3.2's and V4's tools as its wrapper puts them."""
    ours = _ours(case)
    for mine, theirs, cause in DIFFERENCES.get(case["case"], []):
        assert mine in ours, f"named difference gone: {cause}"
        ours = ours.replace(mine, theirs, 1)
    assert ours == case["prompt"]


@pytest.mark.vllm
def test_the_recorded_prompts_are_vllm_034s() -> None:
    """The fixture is what the encoders of an unpacked vLLM 0.34 wheel write today, for the inputs the script
    builds now (the installed vLLM is 0.32; mistral_common, a vLLM dependency, renders Mistral-Nemo)."""
    _vllm034("renderers/inkling_encoding.py")
    if importlib.util.find_spec("mistral_common") is None:
        _absent("mistral_common (a vLLM dependency) is not installed: it renders the Mistral-Nemo cases")
    path = Path(__file__).resolve().parents[2] / "scripts" / "vllm034_prompts.py"
    spec = importlib.util.spec_from_file_location("vllm034_prompts_script", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    encoders = {name: script.load(VLLM034, relative) for name, relative in script.ENCODERS.items()}
    encoders["mistral"] = None  # mistral_common, the installed one (vLLM 0.34 requires >= 1.13.0)
    now = [{"case": name, "renderer": renderer, "messages": messages, "tools": tools, "kwargs": kwargs,
            "prompt": getattr(script, renderer)(encoders[renderer], messages, tools, kwargs)}
           for name, renderer, messages, tools, kwargs in script.cases()]
    assert json.loads(json.dumps(now)) == PROMPTS["cases"]
    assert json.loads(json.dumps(script.kimi_k3_records(VLLM034))) == PROMPTS["kimi_k3_tool_messages"]
    assert PROMPTS["source"]["vllm"] == "0.34.0"


# --- Kimi K3: vLLM 0.34's preparing step (the encoder ships with the model, not with vLLM) -----------------

K3_TOOL = re.compile(r'<\|open\|>message role="tool" tool="([^"]*)" index="(\d+)"<\|sep\|>([^<]*)')
# (case, ours, the `tool`/`index` vLLM hands the encoder, cause): what the encoder writes from them is not known
K3_INDEX: dict[str, tuple[list[tuple[str, int]], list[tuple[str, int]], str]] = {
    "kimi_k3/second-only": ([("get_time", 1)], [("get_time", 2)],
                            ("vLLM numbers a result by the call it answers, we by its place in the run; whether "
                             "`encoding_k3` (the model's tokenizer code, not public here) writes the number it is "
                             "handed is unknown")),
}


@pytest.mark.parametrize("record", PROMPTS["kimi_k3_tool_messages"],
                         ids=[r["case"] for r in PROMPTS["kimi_k3_tool_messages"]])
def test_kimi_k3_tool_results_as_vllm_034_prepares_them(record: dict[str, Any]) -> None:
    """Our renderer puts tool results in the order vLLM 0.34's K3 renderer hands them to the encoder (by id or
    by its `NAME:POSITION` alias; an unknown id leaves the run as it came), named after the call answered."""
    ours = _render("kimi_k3", record["messages"], None)
    assert ours == _render("kimi_k3", record["normalized"], None)
    written = [(tool, int(index)) for tool, index, _ in K3_TOOL.findall(ours)]
    handed = [(m["tool"], m["index"]) for m in record["normalized"] if m["role"] == "tool" and "tool" in m]
    contents = [m["content"] for m in record["normalized"] if m["role"] == "tool"]
    assert [text for _, _, text in K3_TOOL.findall(ours)] == contents
    if record["case"] in K3_INDEX:
        assert (written, handed) == K3_INDEX[record["case"]][:2]
    elif handed:
        assert written == handed


# --- Muse Glimmer (vLLM's example template) ----------------------------------------------------------------

MUSE = json.loads((FIXTURES / "muse_glimmer.json").read_text(encoding="utf-8"))["meta-models/Muse-Glimmer-30B"]


def test_muse_glimmer_template_passes_the_probe_with_its_parser() -> None:
    tokenizer = make_tokenizer(MUSE["chat_template"], name="meta-models/Muse-Glimmer-30B")
    renderer = PromptRenderer(tokenizer, model_id="meta-models/Muse-Glimmer-30B")
    assert (renderer.choice.source, renderer.choice.problems) == ("tokenizer", [])
    assert select_parser("meta-models/Muse-Glimmer-30B", chat_template=renderer.template) == "muse_glimmer"
    # the generation prompt opens an assistant message: the reply names its channel
    prompt = render_chat(tokenizer, MUSE["chat_template"], _probe(), PROBE_TOOLS)
    assert prompt.endswith("<|start|>assistant") and "Reasoning strength: high." in prompt


# --- K2 Horizon: the template's call form reaches the parser -----------------------------------------------


def test_k2_horizon_template_kwargs_reach_its_parser() -> None:
    from wtb_local.run.setup.parser_choice import choose_parser

    class Renderer:
        template = "{{ '<ifm|tool_call>' }}"
        template_kwargs: ClassVar[dict[str, Any]] = {"tool_call_format": "json", "reasoning_effort": "low",
                                                     "unrelated": 1}

    parser, options = choose_parser(None, model="IFM/K2-Horizon-32B", renderer=Renderer())
    assert parser.name == "k2_horizon"
    assert {k: options[k] for k in ("tool_call_format", "reasoning_effort")} == {"tool_call_format": "json",
                                                                                "reasoning_effort": "low"}
    assert "unrelated" not in options
    _, recorded = choose_parser("k2_horizon", model="IFM/K2-Horizon-32B", renderer=Renderer(),
                                       options={"tool_call_format": "xml"})
    assert recorded == {"tool_call_format": "xml"}  # a replay keeps the recorded options
