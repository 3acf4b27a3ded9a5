"""The renderers of the families trained on a Python encoder (chat_templates/ files with a `renderer:` line):
selected in place of the tokenizer's template, probed and hashed like a template, and writing exactly the
encoders' layout (each expected prompt below is written out from the documented format); the community Jinja
imitations of the same encoders serve as cross-checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.rendering.conftest import OVERRIDES_DIR, make_tokenizer
from wtb_local.formats.parsers import select_parser
from wtb_local.formats.rendering.adapt import Adaptation, adapt_messages
from wtb_local.formats.rendering.clock import render_chat
from wtb_local.formats.rendering.probe import PROBE_TOOLS, probe_messages
from wtb_local.formats.rendering.renderer import PromptRenderer
from wtb_local.formats.rendering.templates import (
    list_overrides,
    renderer_for,
    resolve_template,
    template_sha256,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rendering" / "2026"
COMMUNITY = json.loads((FIXTURES / "fam_a_community_templates.json").read_text(encoding="utf-8"))
VERBATIM = json.loads((FIXTURES / "fam_a_templates.json").read_text(encoding="utf-8"))

# renderer -> (a model it serves, the parser its template selects)
RENDERERS = {
    "deepseek_v32": ("deepseek-ai/DeepSeek-V3.2", "deepseek_v32"),
    "deepseek_v4": ("deepseek-ai/DeepSeek-V4-Flash", "deepseek_v4"),
    "deepseek_v41": ("deepseek-ai/DeepSeek-V4.1", "deepseek_v41"),
    "kimi_k3": ("moonshotai/Kimi-K3", "kimi_k3"),
    "inkling": ("thinkingmachines/Inkling", "inkling"),  # layout: tests/rendering/test_renderers_2026h2.py
}
NO_THINKING_SWITCH = {"inkling"}  # a numeric effort only, given with --template-kwarg reasoning_effort=X
BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
D = "｜DSML｜"
SCHEMA = {"name": "get_weather", "description": "Weather.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
TOOLS = [{"type": "function", "function": SCHEMA}]
SCHEMA_LINE = ('{"name": "get_weather", "description": "Weather.", "parameters": {"type": "object", '
               '"properties": {"city": {"type": "string"}}}}')


def _conversation(*results: tuple[str, str]) -> list[dict[str, Any]]:
    calls = [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}},
             {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]
    used = {cid for cid, _ in results} or {"c1"}
    return [{"role": "system", "content": "Current Date: 2024-06-12"},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [c for c in calls if c["id"] in used]},
            *({"role": "tool", "tool_call_id": cid, "content": text} for cid, text in (results or [("c1", "sunny")]))]


def _render(name: str, messages: list[dict[str, Any]], **kwargs: Any) -> str:
    text = (OVERRIDES_DIR / f"{name}.jinja").read_text(encoding="utf-8")
    return render_chat(make_tokenizer(None), text, messages, TOOLS, add_generation_prompt=True, **kwargs)


# --- selection, probe, hash -------------------------------------------------------------------------------


def test_the_renderers_are_the_files_with_a_renderer_line() -> None:
    assert sorted(o.name for o in list_overrides() if o.renderer) == sorted(RENDERERS)


@pytest.mark.parametrize("name", sorted(RENDERERS))
@pytest.mark.parametrize("thinking", [None, True, False])
def test_selected_probed_and_hashed_like_a_template(name: str, thinking: bool | None) -> None:
    model, parser = RENDERERS[name]
    if name in NO_THINKING_SWITCH and thinking is not None:
        with pytest.raises(ValueError, match="has no thinking switch"):
            PromptRenderer(make_tokenizer(None, name=model), model_id=model, thinking=thinking)
        return
    renderer = PromptRenderer(make_tokenizer(None, name=model), model_id=model, thinking=thinking)
    text = (OVERRIDES_DIR / f"{name}.jinja").read_text(encoding="utf-8")
    choice = renderer.choice
    assert (choice.source, choice.sha256, choice.adaptation, choice.problems) == (
        f"renderer:{name}", template_sha256(text), Adaptation(), [])
    assert choice.reason.startswith("rendered as vLLM serves it: ") and choice.reason.endswith(
        "; default adaptation passed the probe")
    assert renderer.template == text and select_parser(model, chat_template=text) == parser


def test_the_renderer_wins_over_the_tokenizers_template_and_a_given_one_over_it(tmp_path: Path) -> None:
    """A Kimi-K3 tokenizer carrying llama.cpp's Jinja port still renders with the renderer (vLLM renders K3
    with its encoder whatever the tokenizer holds); --chat-template names another template explicitly."""
    port = VERBATIM["moonshotai/Kimi-K3"]["chat_template"]
    tokenizer = make_tokenizer(port, name="moonshotai/Kimi-K3")
    assert PromptRenderer(tokenizer, model_id="moonshotai/Kimi-K3").choice.source == "renderer:kimi_k3"
    path = tmp_path / "port.jinja"
    path.write_text(port, encoding="utf-8")
    given = PromptRenderer(tokenizer, model_id="moonshotai/Kimi-K3", chat_template=str(path))
    assert (given.choice.source, given.choice.reason) == (f"path:{path}", "default adaptation passed the probe")
    assert resolve_template("kimi_k3")[0] == "renderer:kimi_k3"


def test_no_renderer_for_other_models() -> None:
    for model in ("deepseek-ai/DeepSeek-V3.1", "deepseek-ai/DeepSeek-V3", "moonshotai/Kimi-K2-Instruct",
                  "moonshotai/Kimi-K2.5", "zai-org/GLM-4.7"):
        assert renderer_for(model) is None, model
    assert [renderer_for(m).name for m in ("/models/DeepSeek-V3.2-Speciale", "deepseek-ai/DeepSeek-V4-Pro",
                                           "deepseek-ai/DeepSeek-V4.1-Base", "moonshotai/Kimi-K3::vllm")] == [
        "deepseek_v32", "deepseek_v4", "deepseek_v41", "kimi_k3"]


def test_a_tokenizer_without_a_template_falls_back_to_an_override_serving_the_model() -> None:
    renderer = PromptRenderer(make_tokenizer(None, name="deepseek-ai/DeepSeek-V3.1"), model_id="deepseek-ai/DeepSeek-V3.1")
    assert renderer.choice.source == "override:deepseek_v31"
    assert renderer.choice.reason == "the tokenizer has no chat template; default adaptation passed the probe"


# --- the encoders' layout, written out ---------------------------------------------------------------------

V32_TOOLS = (
    "## Tools\nYou have access to a set of tools you can use to answer the user's question.\n"
    f'You can invoke functions by writing a "<{D}function_calls>" block like the following as part of your '
    f"reply to the user:\n<{D}function_calls>\n<{D}invoke name=\"$FUNCTION_NAME\">\n"
    f'<{D}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{D}parameter>\n...\n'
    f'</{D}invoke>\n<{D}invoke name="$FUNCTION_NAME2">\n...\n</{D}invoke>\n</{D}function_calls>\n'
    "String and scalar parameters should be specified as is without any escaping or quotes, while lists and "
    'objects should use JSON format. The "string" attribute should be set to "true" for string type parameters '
    'and "false" for other types (numbers, booleans, arrays, objects).\n'
    "If the thinking_mode is enabled, then after function results you should strongly consider outputting a "
    f"thinking block. Here is an example:\n<{D}function_calls>\n...\n</{D}function_calls>\n<function_results>\n"
    "...\n</function_results>\n<think>...thinking about results</think>\nHere are the functions available in "
    f"JSONSchema format:\n<functions>\n{SCHEMA_LINE}\n</functions>\n")


def _v4_tools(space: str, block: str) -> str:
    return (
        "## Tools\n\nYou have access to a set of tools to help answer the user's question. You can invoke tools "
        f'by writing a "<{D}{space}{block}>" block like the following:\n\n<{D}{space}{block}>\n'
        f'<{D}{space}invoke name="$TOOL_NAME">\n<{D}{space}parameter name="$PARAMETER_NAME" string="true|false">'
        f'$PARAMETER_VALUE</{D}{space}parameter>\n...\n</{D}{space}invoke>\n<{D}{space}invoke name="$TOOL_NAME2">'
        f"\n...\n</{D}{space}invoke>\n</{D}{space}{block}>\n\n"
        'String parameters should be specified as is and set `string="true"`. For all other types (numbers, '
        'booleans, arrays, objects), pass the value in JSON format and set `string="false"`.\n\n'
        "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside "
        "<think>...</think> BEFORE any tool calls or final response.\n\nOtherwise, output directly after "
        "</think> with tool calls or final response.\n\n### Available Tool Schemas\n\n"
        f"{SCHEMA_LINE}\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke "
        "tool calls.\n")


def _dsml_call(block: str, space: str = "") -> str:
    return (f'\n\n<{D}{space}{block}>\n<{D}{space}invoke name="get_weather">\n'
            f'<{D}{space}parameter name="city" string="true">Paris</{D}{space}parameter>\n'
            f'<{D}{space}parameter name="days" string="false">2</{D}{space}parameter>\n'
            f'</{D}{space}invoke>\n</{D}{space}{block}>{EOS}')


@pytest.mark.parametrize("thinking", [False, True])
def test_deepseek_v32_layout(thinking: bool) -> None:
    open_, close = ("<think>", "</think>") if thinking else ("</think>", "")
    expected = (f"{BOS}\n\n{V32_TOOLS}Current Date: 2024-06-12<｜User｜>Weather in Paris?<｜Assistant｜>{open_}"
                f"{close}{_dsml_call('function_calls')}\n\n<function_results>\n<result>sunny</result>\n"
                f"</function_results>\n\n{'<think>' if thinking else '</think>'}")
    assert _render("deepseek_v32", _conversation(), thinking=thinking) == expected
    assert _render("deepseek_v32", _conversation(), enable_thinking=thinking) == expected
    if not thinking:  # thinking is off unless asked
        assert _render("deepseek_v32", _conversation()) == expected


HIGH = ("Reasoning Effort: Absolute maximum with no shortcuts permitted.\nYou MUST be very thorough in your thinking "
        "and comprehensively decompose the problem to resolve the root cause, rigorously stress-testing your logic "
        "against all potential paths, edge cases, and adversarial scenarios.\nExplicitly write out your entire "
        "deliberation process, documenting every intermediate step, considered alternative, and rejected hypothesis "
        "to ensure absolutely no assumption is left unchecked.\n\n")
MAX = ("Reasoning Effort: Beyond maximum \u2014 exhaustive, relentless, and uncompromising.\nYou MUST reason with the "
       "utmost depth and rigor, leaving absolutely nothing to chance: exhaustively decompose the problem into its most "
       "fundamental components, trace every causal chain to its root, and resolve the underlying cause rather than "
       "any surface symptom.\nDo not stop reasoning until you have independently verified the solution from multiple "
       "angles and are certain that no assumption remains unchecked and no error remains undiscovered.\n\n")


@pytest.mark.parametrize("thinking", [False, True])
def test_deepseek_v4_layout(thinking: bool) -> None:
    """The tools join the conversation's first system message (after its text), as vLLM's wrapper puts them;
    thinking's default effort (high) writes its preamble first."""
    head = "<think>" if thinking else "</think>"
    expected = (f"{BOS}{HIGH if thinking else ''}Current Date: 2024-06-12\n\n{_v4_tools('', 'tool_calls')}"
                f"<｜User｜>Weather in Paris?<｜Assistant｜>{head}{'</think>' if thinking else ''}"
                f"{_dsml_call('tool_calls')}<｜User｜><tool_result>sunny</tool_result><｜Assistant｜>{head}")
    assert _render("deepseek_v4", _conversation(), thinking=thinking) == expected
    if thinking:  # thinking is on unless switched off
        assert _render("deepseek_v4", _conversation()) == expected
    no_system = [m for m in _conversation() if m["role"] != "system"]
    assert _render("deepseek_v4", no_system, thinking=False).startswith(f"{BOS}\n\n## Tools\n\n")


def test_deepseek_v4_reasoning_effort() -> None:
    plain = _render("deepseek_v4", _conversation()).replace(HIGH, "", 1)
    assert HIGH not in plain
    for effort, preamble in (("max", MAX), ("high", HIGH), ("xhigh", HIGH), (30, HIGH), ("low", ""),
                             ("medium", ""), ("minimal", "")):
        assert _render("deepseek_v4", _conversation(), reasoning_effort=effort) == plain.replace(
            BOS, BOS + preamble, 1), effort
    assert _render("deepseek_v4", _conversation(), reasoning_effort="none") == _render(
        "deepseek_v4", _conversation(), thinking=False)
    assert _render("deepseek_v4", _conversation(), thinking=False, reasoning_effort="max") == _render(
        "deepseek_v4", _conversation(), thinking=False)


@pytest.mark.parametrize("thinking", [False, True])
def test_deepseek_v41_layout(thinking: bool) -> None:
    head = "<think>" if thinking else "</think>"
    effort = "Reasoning Effort: 75 (range 1-100, the higher the value, the more thorough the reasoning)\n\n"
    expected = (f"{BOS}<｜System｜>{effort if thinking else ''}Current Date: 2024-06-12\n\n{_v4_tools(' ', 'calls')}"
                f"<｜User｜>Weather in Paris?<｜Assistant｜>{head}{'</think>' if thinking else ''}"
                f"{_dsml_call('calls', ' ')}<｜User｜><tool_result>sunny</tool_result><｜Assistant｜>{head}")
    assert _render("deepseek_v41", _conversation(), thinking=thinking) == expected


def test_deepseek_v41_effort_numbers_and_system_token() -> None:
    for effort, budget in (("low", 50), ("xhigh", 75), ("max", 100), (33, 33)):
        assert f"<｜System｜>Reasoning Effort: {budget} (range" in _render("deepseek_v41", _conversation(),
                                                                         reasoning_effort=effort)
    no_system = [m for m in _conversation() if m["role"] != "system"]
    chat = _render("deepseek_v41", no_system, thinking=False)
    assert chat.startswith(f"{BOS}<｜System｜>\n\n## Tools\n\n") and "<｜User｜>Weather in Paris?" in chat


def test_tool_results_in_call_order() -> None:
    """V4, V4.1 and K3 put a run of results in the order of the calls they answer (matched by id); V3.2's
    encoder writes them as they come."""
    swapped = _conversation(("c2", "rain"), ("c1", "sunny"))
    assert "<｜User｜><tool_result>sunny</tool_result>\n\n<tool_result>rain</tool_result><｜Assistant｜>" in _render(
        "deepseek_v4", swapped)
    assert "<｜User｜><tool_result>sunny</tool_result>\n\n<tool_result>rain</tool_result><｜Assistant｜>" in _render(
        "deepseek_v41", swapped)
    assert "<function_results>\n<result>rain</result>\n<result>sunny</result>\n</function_results>" in _render(
        "deepseek_v32", swapped)
    k3 = _render("kimi_k3", swapped)
    assert ('<|open|>message role="tool" tool="get_weather" index="1"<|sep|>sunny<|close|>message<|sep|><|end_of_msg|>'
            '<|open|>message role="tool" tool="get_weather" index="2"<|sep|>rain') in k3


def test_kimi_k3_layout() -> None:
    tools_json = ('[{"function":{"description":"Weather.","name":"get_weather","parameters":{"properties":'
                  '{"city":{"type":"string"}},"type":"object"}},"type":"function"}]')
    effort = ("<|open|>message role=\"system\" type=\"thinking-effort\"<|sep|>`thinking_effort` guides on how much "
              "to think in your thinking channel (not including the response channel), supported values include "
              "`low`, `medium`, `high`, and `max`.\nNow the system is invoked with `thinking_effort=max`."
              "<|close|>message<|sep|><|end_of_msg|>")
    body = ('<|open|>message role="system"<|sep|>Current Date: 2024-06-12<|close|>message<|sep|><|end_of_msg|>'
            '<|open|>message role="user"<|sep|>Weather in Paris?<|close|>message<|sep|><|end_of_msg|>'
            '<|open|>message role="assistant"<|sep|>THINK<|open|>response<|sep|><|close|>response<|sep|>'
            '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
            '<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>'
            '<|open|>argument key="days" type="number"<|sep|>2<|close|>argument<|sep|><|close|>call<|sep|>'
            '<|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>'
            '<|open|>message role="tool" tool="get_weather" index="1"<|sep|>sunny<|close|>message<|sep|>'
            '<|end_of_msg|><|open|>message role="assistant"<|sep|>')
    declare = ('<|open|>message role="system" type="tool-declare"<|sep|># Tools\nHere are the available tools, '
               f"described in JSONSchema.\n\n```json\n{tools_json}\n```<|close|>message<|sep|><|end_of_msg|>")
    thinking = declare + effort + body.replace("THINK", "<|open|>think<|sep|><|close|>think<|sep|>") + "<|open|>think<|sep|>"
    assert _render("kimi_k3", _conversation()) == thinking
    assert _render("kimi_k3", _conversation(), thinking=False) == declare + body.replace("THINK", "") + "<|open|>response<|sep|>"
    assert _render("kimi_k3", _conversation(), reasoning_effort="none") == declare + body.replace("THINK", "") + "<|open|>response<|sep|>"


def test_kimi_k3_escapes_attributes_and_refuses_unknown_efforts() -> None:
    import jinja2

    messages = [{"role": "user", "content": 'a "b" & c', "name": 'x"y&z'}]
    assert '<|open|>message role="user" name="x&quot;y&amp;z"<|sep|>a "b" & c<|close|>message' in _render("kimi_k3", messages)
    with pytest.raises(jinja2.TemplateError, match="thinking_effort must be low, high or max"):
        _render("kimi_k3", messages, thinking_effort="medium")


# --- cross-checks against the community Jinja imitations -----------------------------------------------------


def _probe_renderings(template: str, **kwargs: Any) -> str:
    messages = adapt_messages(probe_messages(), Adaptation())
    return render_chat(make_tokenizer(None), template, messages, PROBE_TOOLS, add_generation_prompt=True, **kwargs)


@pytest.mark.parametrize("thinking", [False, True])
def test_kimi_k3_matches_llama_cpps_port_byte_for_byte(thinking: bool) -> None:
    port = VERBATIM["moonshotai/Kimi-K3"]["chat_template"]
    mine = (OVERRIDES_DIR / "kimi_k3.jinja").read_text(encoding="utf-8")
    assert _probe_renderings(mine, thinking=thinking) == _probe_renderings(port, thinking=thinking)


@pytest.mark.parametrize(("key", "name"), [("deepseek-ai/DeepSeek-V3.2", "deepseek_v32"),
                                           ("deepseek-ai/DeepSeek-V4-Flash", "deepseek_v4"),
                                           ("deepseek-ai/DeepSeek-V4-Flash-0731", "deepseek_v4")])
@pytest.mark.parametrize("thinking", [False, True])
def test_deepseek_conversation_matches_llama_cpps_imitation(key: str, name: str, thinking: bool) -> None:
    """From the first user turn on (every call, result and turn of the probe conversation) the renderer and
    llama.cpp's imitation agree, but for V3.2's last generation prompt without thinking, where the
    imitation writes `<think></think>` and the encoder `</think>`. Before it they differ where vLLM's encoder
    does: V3.2's tools come first, in a system message of their own, and the conversation's system text follows
    them (the imitation puts it first), with its tool instructions in single lines; V4's join the system text
    as in the imitation, after the effort preamble of thinking's default effort."""
    community = _probe_renderings(COMMUNITY[key]["chat_template"], thinking=thinking)
    mine = _probe_renderings((OVERRIDES_DIR / f"{name}.jinja").read_text(encoding="utf-8"), thinking=thinking)
    theirs_turns, mine_turns = community[community.index("<｜User｜>"):], mine[mine.index("<｜User｜>"):]
    if name == "deepseek_v32" and not thinking:
        theirs_turns = theirs_turns.removesuffix("<think></think>") + "</think>"
    assert mine_turns == theirs_turns
    system = "Current Date: 2024-06-12 10:23:45 Wednesday"
    assert community.startswith(f"<s>{system}\n\n## Tools")
    if name == "deepseek_v32":
        assert mine.startswith(f"{BOS}\n\n## Tools") and mine[:mine.index("<｜User｜>")].endswith(system)
    else:  # V4's tools join the system message, as in the imitation; thinking's default effort writes a preamble
        assert mine.startswith(f"{BOS}{HIGH if thinking else ''}{system}\n\n## Tools")
    schemas = [json.dumps(t["function"], ensure_ascii=False) for t in PROBE_TOOLS]
    assert all(s in community and s in mine for s in schemas)
