"""The start-of-run probe: broken shipped templates are detected and fall back to their override; good
templates pass with the default adaptation; explicit templates that fail raise a clear error."""

from __future__ import annotations

import pytest

from tests.rendering.conftest import OVERRIDES_DIR, make_tokenizer, real_templates
from wtb_local.formats.rendering.adapt import Adaptation, adapt_messages
from wtb_local.formats.rendering.probe import PROBE_TOOLS, check_rendered, probe_messages
from wtb_local.formats.rendering.renderer import PromptRenderer
from wtb_local.formats.rendering.templates import TemplateError, template_sha256

# Template -> (override expected, what the template gets wrong). Garbled history calls (a call the parser
# cannot read back, or reads back with other types) are refused like dropped ones: the template is never
# recorded as good while its past calls read back wrong.
_PYTHONIC_REPR = 'reads back with parser pythonic as probe_weather("city=Zanzibar-Q7, days=4817")'
BROKEN = {
    "meta-llama/Llama-3.1-8B-Instruct": ("llama3_json", "only supports single tool-calls"),
    "meta-llama/Llama-3.2-3B-Instruct": ("llama3_json", "only supports single tool-calls"),
    "meta-llama/Llama-3.3-70B-Instruct": ("llama3_json", "only supports single tool-calls"),
    "openai/gpt-oss-120b": ("gpt_oss", ('reads back with parser gpt_oss as probe_weather({"city": "Zanzibar-Q7", '
                                        '"days": 4817}), not probe_weather')),
    "ibm-granite/granite-3.3-2b-instruct": ("granite3_3", "reads back with parser granite as no calls"),
    "MadeAgents/Hammer2.1-7b": ("hammer2_1", "reads back with parser hammer as no calls"),
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": ("deepseek_r1_distill", "tool definitions not rendered"),
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": ("deepseek_r1_distill", "tool definitions not rendered"),
    "deepseek-ai/DeepSeek-V3.1": ("deepseek_v31", "tool definitions not rendered"),
    "google/gemma-3-27b-it": ("gemma3_pythonic", "Conversation roles must alternate"),
    "microsoft/Phi-4-mini-instruct": ("phi4_mini", "tool definitions not rendered"),
    # vLLM's example templates for these families garble past calls; the probe sends them to the override
    "Team-ACE/ToolACE-2-8B::vllm": ("pythonic_llama3", _PYTHONIC_REPR),
    "meta-llama/Llama-3.2-3B-Instruct::vllm-pythonic": ("llama3_json", _PYTHONIC_REPR),
    "meta-llama/Llama-4-Scout-17B-16E-Instruct::vllm": (
        "llama4_pythonic", 'reads back with parser pythonic as probe_weather("city=\\"Zanzibar-Q7\\", days=\\"4817\\"")'),
    "google/gemma-3-27b-it::vllm": (
        "gemma3_pythonic", 'reads back with parser pythonic as probe_weather("city=\\"Zanzibar-Q7\\"days=4817")'),
    "microsoft/Phi-4-mini-instruct::vllm": ("phi4_mini", "reads back with parser phi4_mini as no calls"),
    "deepseek-ai/DeepSeek-V3.1::vllm": ("deepseek_v31", ("history turn 2 (probe_weather, probe_weather, "
                                                         "probe_convert): no clean cut of the rendered turn")),
    "meta-llama/Llama-3.1-8B-Instruct::vllm": ("llama3_json", "only supports single tool-calls"),
    "deepseek-ai/DeepSeek-V3-0324::vllm": ("deepseek_v3", ("history turn 2 (probe_weather, probe_weather, "
                                                           "probe_convert): no clean cut of the rendered turn")),
}
# A template that fails the probe under a model id no override serves: refused at start-up with the
# problem and --chat-template (template key, model id, problem).
REFUSED = [("deepseek-ai/DeepSeek-V3-0324::vllm", "someone/deepseek-v3-finetune",
            "history turn 2 (probe_weather, probe_weather, probe_convert): no clean cut of the rendered turn")]
# Good templates whose family needs reshaped ids.
ID_STYLES = {"mistralai/Mistral-Nemo-Instruct-2407": "mistral",
             "mistralai/Mistral-Small-3.2-24B-Instruct-2506": "mistral",
             "mistralai/Mistral-7B-Instruct-v0.3::vllm-parallel": "mistral",
             "moonshotai/Kimi-K2-Instruct": "kimi"}


def _renderer(key: str, **kwargs) -> PromptRenderer:
    # the tokenizer's name and the model id are the checkpoint's (the "::variant" suffix is ours)
    model_id = key.split("::", 1)[0]
    return PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"], name=model_id),
                          model_id=model_id, **kwargs)


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


@pytest.mark.parametrize("key", sorted(set(real_templates()) - set(BROKEN)))
def test_good_template_passes_with_the_default_adaptation(key: str) -> None:
    choice = _renderer(key).choice
    assert choice.source == "tokenizer"
    assert choice.adaptation == Adaptation(ids=ID_STYLES.get(key, "keep"))
    assert choice.problems == []
    assert choice.reason == "default adaptation passed the probe"


@pytest.mark.parametrize(("key", "model_id", "problem"), REFUSED)
def test_failing_template_without_override_is_refused(key: str, model_id: str, problem: str) -> None:
    with pytest.raises(TemplateError) as caught:
        PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"], name=model_id), model_id=model_id)
    message = str(caught.value)
    assert message.startswith(f"chat template tokenizer of {model_id} fails the probe (no override in "
                              "chat_templates/ serves it): ")
    assert "\n" not in message and problem in message
    assert message.endswith("; pass --chat-template NAME|PATH")


def test_the_check_sees_a_missing_result() -> None:
    text = _renderer("Qwen/Qwen2.5-7B-Instruct")._render_with(
        real_templates()["Qwen/Qwen2.5-7B-Instruct"]["chat_template"],
        adapt_messages(probe_messages(), Adaptation()), PROBE_TOOLS)
    assert check_rendered(text) == []
    assert check_rendered(text.replace("RESULT-BRAVO-274", "X")) == ["tool result 'RESULT-BRAVO-274 snow' missing"]


def test_template_without_override_falls_back_to_split_calls() -> None:
    # The official Llama template under an id no override serves: split parallel calls are the last resort.
    text = real_templates()["meta-llama/Llama-3.1-8B-Instruct"]["chat_template"]
    renderer = PromptRenderer(make_tokenizer(text, name="someone/custom-llama"), model_id="someone/custom-llama")
    assert renderer.choice.source == "tokenizer"
    assert renderer.choice.adaptation.split_parallel
    assert check_rendered(renderer.render(probe_messages(), PROBE_TOOLS).text) == []


def test_template_that_cannot_show_tools_raises_naming_it() -> None:
    text = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    with pytest.raises(TemplateError, match=r"^chat template tokenizer of someone/plain fails the probe .*: "
                                            r"tool definitions not rendered.*; pass --chat-template NAME\|PATH$"):
        PromptRenderer(make_tokenizer(text, name="someone/plain"), model_id="someone/plain", parser="hermes")


def test_template_without_a_parser_cannot_be_probed() -> None:
    # past calls can only be read back with a parser: no parser, no verdict (never a silent "good")
    text = _HERMES_LIKE.replace("ARGS", GOOD_ARGS)  # no marker of any parser's format in it
    with pytest.raises(TemplateError, match=r"probe of someone/plain: no tool-call parser matches .* pass --parser"):
        PromptRenderer(make_tokenizer(text, name="someone/plain"), model_id="someone/plain")


def test_explicit_template_path_that_fails_raises(tmp_path) -> None:
    path = tmp_path / "plain.jinja"
    path.write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}", encoding="utf-8")
    tokenizer = make_tokenizer(real_templates()["Qwen/Qwen2.5-7B-Instruct"]["chat_template"])
    with pytest.raises(TemplateError, match=rf"chat template path:{path} of Qwen/x fails the probe"):
        PromptRenderer(tokenizer, model_id="Qwen/x", chat_template=str(path), parser="hermes")


# A minimal Hermes-style template (parsed by `hermes`): GOOD writes arguments with tojson; the garbling
# variants re-render them the way broken shipped templates do.
_HERMES_LIKE = (
    "{%- if tools %}<|im_start|>system\n{{ tools | tojson }}<|im_end|>\n{% endif -%}"
    "{%- for m in messages -%}<|im_start|>{{ m.role }}\n{{ m.content or '' }}"
    "{%- for c in m.tool_calls or [] -%}<tool_call>\n{\"name\": \"{{ c.function.name }}\", \"arguments\": ARGS}\n</tool_call>"
    "{%- endfor -%}<|im_end|>\n{% endfor -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant\n{%- endif -%}")
GOOD_ARGS = "{{ c.function.arguments | tojson }}"
# every value as a quoted string (Llama-4 vLLM style): 4817 becomes "4817", True becomes "True"
STRINGIFIED_ARGS = ('{ {%- for k, v in c.function.arguments.items() -%}"{{ k }}": "{{ v }}"'
                    '{{ ", " if not loop.last }}{%- endfor -%} }')
# only the first call of a message (gpt-oss style): the later parallel calls vanish
FIRST_ONLY = _HERMES_LIKE.replace("m.tool_calls or []", "(m.tool_calls or [])[:1]")


def _hermes_like(args: str, base: str = _HERMES_LIKE) -> PromptRenderer:
    text = base.replace("ARGS", args)
    return PromptRenderer(make_tokenizer(text, name="someone/custom"), model_id="someone/custom", parser="hermes")


def test_past_calls_that_read_back_exactly_pass() -> None:
    renderer = _hermes_like(GOOD_ARGS)
    assert renderer.choice.source == "tokenizer" and renderer.choice.problems == []


def test_stringified_numbers_in_history_are_refused() -> None:
    with pytest.raises(TemplateError) as caught:
        _hermes_like(STRINGIFIED_ARGS)
    message = str(caught.value)
    assert message.startswith("chat template tokenizer of someone/custom fails the probe (no override in "
                              "chat_templates/ serves it): tokenizer [arguments=dict,content=empty,ids=keep]: "
                              "history turn 2 (probe_weather, probe_weather, probe_convert) reads back with "
                              'parser hermes as probe_weather({"city": "Zanzibar-Q7", "days": "4817"})')
    assert message.endswith("; pass --chat-template NAME|PATH") and "\n" not in message


def test_dropped_parallel_calls_are_seen_and_split() -> None:
    # a template that shows only the first call of a message reads back short; one call per message is
    # the last resort that shows them all
    renderer = _hermes_like(GOOD_ARGS, FIRST_ONLY)
    assert renderer.choice.adaptation == Adaptation(split_parallel=True)
    assert renderer.choice.problems[0] == (
        "tokenizer [arguments=dict,content=empty,ids=keep]: history turn 2 (probe_weather, probe_weather, "
        'probe_convert) reads back with parser hermes as probe_weather({"city": "Zanzibar-Q7", "days": 4817}), '
        'not probe_weather({"city": "Zanzibar-Q7", "days": 4817}); probe_weather({"city": "São Paulo — '
        '北京-R8", "days": 5923}); probe_convert({"amount": 12.75, "currency": "XKQD", "exact": true, "notes": '
        '["say \\"hi\\"", "café"], "route": {"fee": 0.5, "hops": 2, "via": ["EUR", "USD"]}})')


def test_typed_comparison() -> None:
    from wtb_local.formats.rendering.probe import typed

    assert typed({"a": 3}) != typed({"a": "3"})
    assert typed({"a": 1}) != typed({"a": True}) != typed({"a": 1.0})
    assert typed({"b": [1, {"c": None}], "a": "x"}) == typed({"a": "x", "b": [1, {"c": None}]})


def test_probe_covers_every_argument_type() -> None:
    from wtb_local.formats.rendering.probe import _CALLS

    values = [v for _, _, args in _CALLS for v in args.values()]
    nested = [x for v in values if isinstance(v, dict) for x in v.values()]
    kinds = {type(v).__name__ for v in values + nested}
    assert kinds == {"str", "int", "float", "bool", "dict", "list"}
    assert any(isinstance(v, str) and not v.isascii() for v in values)
    # parallel calls (two of the same tool) and a later sequential call, each followed by its results
    roles = [m["role"] + str(len(m.get("tool_calls") or [])) for m in probe_messages()]
    assert roles == ["system0", "user0", "assistant3", "tool0", "tool0", "tool0", "assistant1", "tool0",
                     "assistant0", "user0"]


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
