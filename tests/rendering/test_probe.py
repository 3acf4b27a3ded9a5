"""The start-of-run probe: broken shipped templates are detected and fall back to their override; good
templates pass with the default adaptation; explicit templates that fail raise a clear error."""

from __future__ import annotations

import pytest

from tests.rendering.conftest import OVERRIDES_DIR, make_tokenizer, real_templates
from wtb_local.rendering.adapt import Adaptation, adapt_messages
from wtb_local.rendering.probe import PROBE_TOOLS, check_rendered, probe_messages
from wtb_local.rendering.renderer import PromptRenderer
from wtb_local.rendering.templates import TemplateError, template_sha256

# Shipped template -> (override expected, what the shipped template gets wrong).
BROKEN = {
    "meta-llama/Llama-3.1-8B-Instruct": ("llama3_json", "only supports single tool-calls"),
    "meta-llama/Llama-3.2-3B-Instruct": ("llama3_json", "only supports single tool-calls"),
    "meta-llama/Llama-3.3-70B-Instruct": ("llama3_json", "only supports single tool-calls"),
    "openai/gpt-oss-120b": ("gpt_oss", "argument city=Ulaanbaatar-R8 missing"),
    "ibm-granite/granite-3.3-2b-instruct": ("granite3_3", "argument city=Zanzibar-Q7 missing"),
    "MadeAgents/Hammer2.1-7b": ("hammer2_1", "argument city=Zanzibar-Q7 missing"),
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": ("deepseek_r1_distill", "tool definitions not rendered"),
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": ("deepseek_r1_distill", "tool definitions not rendered"),
    "deepseek-ai/DeepSeek-V3.1": ("deepseek_v31", "tool definitions not rendered"),
}
# Good templates whose family needs reshaped ids.
ID_STYLES = {"mistralai/Mistral-Nemo-Instruct-2407": "mistral",
             "mistralai/Mistral-Small-3.2-24B-Instruct-2506": "mistral",
             "mistralai/Mistral-7B-Instruct-v0.3::vllm-parallel": "mistral",
             "moonshotai/Kimi-K2-Instruct": "kimi"}
# vLLM's Llama-3.1 JSON example raises on parallel calls like the official one (served by llama3_json too).
ALSO_BROKEN = {"meta-llama/Llama-3.1-8B-Instruct::vllm": "llama3_json"}


def _renderer(key: str, **kwargs) -> PromptRenderer:
    return PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"], name=key), model_id=key, **kwargs)


@pytest.mark.parametrize("key", sorted(BROKEN))
def test_broken_template_falls_back_to_its_override(key: str) -> None:
    override, symptom = BROKEN[key]
    renderer = _renderer(key)
    choice = renderer.choice
    assert choice.source == f"override:{override}"
    assert choice.adaptation == Adaptation()
    assert choice.sha256 == template_sha256((OVERRIDES_DIR / f"{override}.jinja").read_text(encoding="utf-8"))
    assert len(choice.problems) == 4 and any(symptom in p for p in choice.problems), choice.problems
    assert all(p.startswith("tokenizer [") for p in choice.problems)
    assert "failed the probe" in choice.reason


@pytest.mark.parametrize("key", sorted(BROKEN))
def test_override_renders_every_call_and_result(key: str) -> None:
    renderer = _renderer(key)
    text = renderer.render(probe_messages(), PROBE_TOOLS).text
    assert check_rendered(text) == []


@pytest.mark.parametrize("key", sorted(set(real_templates()) - set(BROKEN) - set(ALSO_BROKEN)))
def test_good_template_passes_with_the_default_adaptation(key: str) -> None:
    choice = _renderer(key).choice
    assert choice.source == "tokenizer"
    assert choice.adaptation == Adaptation(ids=ID_STYLES.get(key, "keep"))
    assert choice.problems == []
    assert choice.reason == "default adaptation passed the probe"


def test_vllm_llama_json_example_is_served_by_the_override() -> None:
    key = "meta-llama/Llama-3.1-8B-Instruct::vllm"
    assert _renderer(key).choice.source == f"override:{ALSO_BROKEN[key]}"


def test_the_check_sees_a_dropped_call() -> None:
    text = _renderer("Qwen/Qwen2.5-7B-Instruct")._render_with(
        real_templates()["Qwen/Qwen2.5-7B-Instruct"]["chat_template"],
        adapt_messages(probe_messages(), Adaptation()), PROBE_TOOLS)
    assert check_rendered(text) == []
    assert check_rendered(text.replace("Ulaanbaatar-R8", "X")) == ["call probe_weather argument city=Ulaanbaatar-R8 missing"]


def test_template_without_override_falls_back_to_split_calls() -> None:
    # The official Llama template under an id no override serves: split parallel calls are the last resort.
    text = real_templates()["meta-llama/Llama-3.1-8B-Instruct"]["chat_template"]
    renderer = PromptRenderer(make_tokenizer(text, name="someone/custom-llama"), model_id="someone/custom-llama")
    assert renderer.choice.source == "tokenizer"
    assert renderer.choice.adaptation.split_parallel
    assert check_rendered(renderer.render(probe_messages(), PROBE_TOOLS).text) == []


def test_template_that_cannot_show_tools_raises_naming_it() -> None:
    text = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    with pytest.raises(TemplateError, match=r"chat template tokenizer of someone/plain fails the probe"):
        PromptRenderer(make_tokenizer(text, name="someone/plain"), model_id="someone/plain")


def test_explicit_template_path_that_fails_raises(tmp_path) -> None:
    path = tmp_path / "plain.jinja"
    path.write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}", encoding="utf-8")
    tokenizer = make_tokenizer(real_templates()["Qwen/Qwen2.5-7B-Instruct"]["chat_template"])
    with pytest.raises(TemplateError, match=rf"chat template path:{path} of Qwen/x fails the probe"):
        PromptRenderer(tokenizer, model_id="Qwen/x", chat_template=str(path))


def test_explicit_override_by_name_and_by_path(tmp_path) -> None:
    tokenizer = make_tokenizer(real_templates()["openai/gpt-oss-120b"]["chat_template"])
    by_name = PromptRenderer(tokenizer, model_id="x/y", chat_template="gpt_oss")
    assert by_name.choice.source == "override:gpt_oss"
    path = tmp_path / "mine.jinja"
    path.write_text((OVERRIDES_DIR / "gpt_oss.jinja").read_text(encoding="utf-8"), encoding="utf-8")
    by_path = PromptRenderer(tokenizer, model_id="x/y", chat_template=str(path))
    assert by_path.choice.source == f"path:{path}"
    assert by_path.choice.sha256 == by_name.choice.sha256


def test_choice_is_recordable_json() -> None:
    dumped = _renderer("openai/gpt-oss-120b").choice.model_dump(mode="json")
    assert set(dumped) == {"source", "sha256", "adaptation", "reason", "problems"}
    assert dumped["adaptation"] == {"arguments": "dict", "content": "empty", "ids": "keep", "split_parallel": False}
