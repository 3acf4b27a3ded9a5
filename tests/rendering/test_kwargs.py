"""Template kwargs: the per-family thinking switch and `--template-kwarg k=v` parsing."""

from __future__ import annotations

import json

import pytest

from tests.rendering.conftest import make_tokenizer, real_templates
from wtb_local.formats.rendering.kwargs import (
    local_template,
    parse_template_kwargs,
    resolve_template_kwargs,
    thinking_kwargs,
    thinking_switch,
)
from wtb_local.formats.rendering.renderer import PromptRenderer

SWITCHES = {
    "Qwen/Qwen3-0.6B": ("enable_thinking", {"enable_thinking": False}),
    "zai-org/GLM-4.6": ("enable_thinking", {"enable_thinking": False}),
    "tencent/Hunyuan-A13B-Instruct::vllm": ("enable_thinking", {"enable_thinking": False}),
    "deepseek-ai/DeepSeek-V3.1": ("thinking", {"thinking": False}),
    "ibm-granite/granite-3.3-2b-instruct": ("thinking", {"thinking": False}),
    "ByteDance-Seed/Seed-OSS-36B-Instruct": ("thinking_budget", {"thinking_budget": 0}),
    "openai/gpt-oss-120b": ("reasoning_effort", {"reasoning_effort": "low"}),
}


@pytest.mark.parametrize("key", sorted(SWITCHES))
def test_switch_read_from_the_real_template(key: str) -> None:
    switch, off = SWITCHES[key]
    template = real_templates()[key]["chat_template"]
    assert thinking_switch(key, template) == switch
    assert thinking_kwargs(False, model_id=key, template=template) == off


@pytest.mark.parametrize(("model_id", "switch"), [
    ("Qwen/Qwen3-8B", "enable_thinking"), ("Qwen/Qwen3.5-27B", "enable_thinking"),
    ("zai-org/GLM-4.5-Air", "enable_thinking"), ("deepseek-ai/DeepSeek-V3.1", "thinking"),
    ("openai/gpt-oss-20b", "reasoning_effort"), ("Qwen/Qwen3-Coder-30B-A3B-Instruct", None),
    ("meta-llama/Llama-3.1-8B-Instruct", None),
])
def test_switch_from_the_model_id_when_the_template_is_unknown(model_id: str, switch: str | None) -> None:
    assert thinking_switch(model_id, None) == switch


def test_on_off_values_and_not_asked() -> None:
    assert thinking_kwargs(True, model_id="Qwen/Qwen3-8B", template=None) == {"enable_thinking": True}
    assert thinking_kwargs(True, model_id="ByteDance-Seed/Seed-OSS-36B-Instruct", template=None) == {
        "thinking_budget": -1}
    assert thinking_kwargs(True, model_id="openai/gpt-oss-20b", template=None) == {"reasoning_effort": "high"}
    assert thinking_kwargs(None, model_id="meta-llama/Llama-3.1-8B-Instruct", template=None) == {}


def test_asking_a_model_without_a_switch_is_an_error() -> None:
    with pytest.raises(ValueError, match="--no-thinking: the chat template of meta-llama/Llama-3.1-8B-Instruct "
                                         "has no thinking switch"):
        thinking_kwargs(False, model_id="meta-llama/Llama-3.1-8B-Instruct", template="{{ messages }}")


def test_template_kwarg_values_are_json_when_they_parse() -> None:
    assert parse_template_kwargs(["a=true", "b=3", 'c={"x": [1]}', "d=plain text", "e=", "f=a=b"]) == {
        "a": True, "b": 3, "c": {"x": [1]}, "d": "plain text", "e": "", "f": "a=b"}
    with pytest.raises(ValueError, match="--template-kwarg 'novalue': expected KEY=VALUE"):
        parse_template_kwargs(["novalue"])


def test_explicit_kwargs_override_the_switch_and_local_dirs_are_read(tmp_path) -> None:
    make_tokenizer(real_templates()["Qwen/Qwen3-0.6B"]["chat_template"]).save_pretrained(tmp_path)
    assert local_template(str(tmp_path)) == real_templates()["Qwen/Qwen3-0.6B"]["chat_template"]
    assert resolve_template_kwargs(str(tmp_path), False, []) == {"enable_thinking": False}
    assert resolve_template_kwargs(str(tmp_path), False, ["enable_thinking=true", "x=1"]) == {
        "enable_thinking": True, "x": 1}
    assert local_template(str(tmp_path / "missing")) is None


def test_thinking_off_reaches_the_prompt() -> None:
    key = "Qwen/Qwen3-0.6B"
    messages = [{"role": "user", "content": "hi"}]
    off = PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"]), model_id=key, thinking=False)
    on = PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"]), model_id=key)
    assert off.render(messages, []).text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert on.render(messages, []).text.endswith("<|im_start|>assistant\n")
    assert json.dumps(off.template_kwargs) == '{"enable_thinking": false}'
