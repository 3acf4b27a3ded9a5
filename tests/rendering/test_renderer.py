"""PromptRenderer: transformers' own rendering, no duplicated BOS, byte stability, the assistant cut."""

from __future__ import annotations

import json

import pytest

from tests.rendering.conftest import make_tokenizer, real_templates
from wtb_local.benchmark.dataset import load_dataset
from wtb_local.benchmark.evaluator.episode import session_episodes
from wtb_local.formats.rendering.renderer import PromptRenderer
from wtb_local.formats.rendering.templates import TemplateError

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN = "Qwen/Qwen2.5-7B-Instruct"


def _llama_tokenizer():
    # Llama-style: the template writes BOS and the tokenizer also prepends BOS when adding special tokens.
    return make_tokenizer(real_templates()[LLAMA]["chat_template"], bos="<|begin_of_text|>", eos="<|eot_id|>",
                          add_bos=True, name=LLAMA)


def _step_requests(limit: int = 6) -> list[tuple[list[dict], list[dict]]]:
    requests = []
    for session in load_dataset("sample", quiet=True)[:3]:
        for episode in session_episodes(session)[:2]:
            requests.append(episode.request())
    return requests[:limit]


def test_no_duplicated_bos() -> None:
    tokenizer = _llama_tokenizer()
    bos = tokenizer.convert_tokens_to_ids("<|begin_of_text|>")
    renderer = PromptRenderer(tokenizer, model_id=LLAMA)
    messages, tools = _step_requests(1)[0]
    rendered = renderer.render(messages, tools)
    assert rendered.text.startswith("<|begin_of_text|>")
    assert rendered.token_ids[0] == bos and rendered.token_ids.count(bos) == 1
    # The naive path (special tokens added again) would have doubled it: the check above can fail.
    assert tokenizer(rendered.text)["input_ids"][:2] == [bos, bos]


def test_token_ids_decode_back_to_the_text() -> None:
    renderer = PromptRenderer(_llama_tokenizer(), model_id=LLAMA)
    for messages, tools in _step_requests():
        rendered = renderer.render(messages, tools)
        assert renderer.tokenizer.decode(rendered.token_ids, skip_special_tokens=False) == rendered.text


@pytest.mark.parametrize("key", [QWEN, LLAMA, "openai/gpt-oss-120b", "mistralai/Mistral-Nemo-Instruct-2407",
                                 "moonshotai/Kimi-K2-Instruct", "zai-org/GLM-4.6"])
def test_rendering_is_byte_stable(key: str) -> None:
    first = PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"], name=key), model_id=key)
    second = PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"], name=key), model_id=key)
    for messages, tools in _step_requests():
        a = first.render(messages, tools)
        b = first.render(json.loads(json.dumps(messages)), json.loads(json.dumps(tools)))
        c = second.render(messages, tools)
        assert a.text.encode("utf-8") == b.text.encode("utf-8") == c.text.encode("utf-8")
        assert a.token_ids == b.token_ids == c.token_ids
    assert first.choice == second.choice


def test_render_does_not_mutate_the_conversation() -> None:
    renderer = PromptRenderer(make_tokenizer(real_templates()["mistralai/Mistral-Nemo-Instruct-2407"]
                                             ["chat_template"]), model_id="mistralai/Mistral-Nemo-Instruct-2407")
    messages, tools = _step_requests(6)[-1]
    before = json.dumps([messages, tools], sort_keys=True)
    renderer.render(messages, tools)
    assert json.dumps([messages, tools], sort_keys=True) == before


def test_ids_are_reshaped_consistently_in_the_prompt() -> None:
    key = "mistralai/Mistral-Nemo-Instruct-2407"
    renderer = PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"]), model_id=key)
    calls = [{"id": f"call_{n}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
             for n in ("first", "second")]
    messages = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "", "tool_calls": calls},
                {"role": "tool", "tool_call_id": "call_first", "content": "r1"},
                {"role": "tool", "tool_call_id": "call_second", "content": "r2"},
                {"role": "assistant", "content": "done"}, {"role": "user", "content": "v"}]
    tools = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}]
    text = renderer.render(messages, tools).text
    from wtb_local.formats.rendering.adapt import mistral_id
    for original in ("call_first", "call_second"):
        assert text.count(mistral_id(original)) == 2  # once on the call, once on its result
    assert "call_first" not in text


def test_assistant_text_cuts_the_native_completion() -> None:
    renderer = PromptRenderer(make_tokenizer(real_templates()[QWEN]["chat_template"], eos="<|im_end|>"),
                              model_id=QWEN)
    messages = [{"role": "system", "content": "Current Date: 2024-06-12"}, {"role": "user", "content": "Paris?"}]
    tools = [{"type": "function", "function": {"name": "w", "description": "d", "parameters": {"type": "object"}}}]
    reply = {"content": "", "tool_calls": [{"id": "call_1", "type": "function",
                                            "function": {"name": "w", "arguments": '{"city": "Paris"}'}}]}
    assert renderer.assistant_text(messages, tools, reply) == (
        '<tool_call>\n{"name": "w", "arguments": {"city": "Paris"}}\n</tool_call>')
    assert renderer.assistant_text(messages, tools, {"content": "Bonjour", "tool_calls": None}) == "Bonjour"


def test_from_pretrained_loads_a_local_directory_offline(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _llama_tokenizer().save_pretrained(tmp_path)
    renderer = PromptRenderer.from_pretrained(str(tmp_path))
    assert renderer.model_id == str(tmp_path)
    messages, tools = _step_requests(1)[0]
    assert renderer.render(messages, tools).text.startswith("<|begin_of_text|><|start_header_id|>system")


def test_a_tokenizer_without_a_template_is_a_clear_error() -> None:
    with pytest.raises(TemplateError, match="tokenizer of plain/model has no .*chat template"):
        PromptRenderer(make_tokenizer(None), model_id="plain/model")


def test_kimi_results_carry_native_ids_with_a_running_index() -> None:
    key = "moonshotai/Kimi-K2-Instruct"
    renderer = PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"]), model_id=key)
    messages, tools = [{"role": "user", "content": "u"}], []
    for step, names in enumerate((["f", "g"], ["f"])):
        calls = [{"id": f"call_{step}_{k}", "type": "function", "function": {"name": n, "arguments": "{}"}}
                 for k, n in enumerate(names)]
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": f"r{step}"} for c in calls]
    text = renderer.render(messages, tools).text
    returns = [line.split("\\n")[0] for line in text.split("## Return of ")[1:]]
    assert returns == ["functions.f:0", "functions.g:1", "functions.f:2"]
    assert "call_0_0" not in text


def _gold_path_requests() -> list[tuple[list[dict], list[dict]]]:
    requests = []
    for session in load_dataset("sample", quiet=True):
        for episode in session_episodes(session):
            while not episode.done:
                requests.append(episode.request())
                episode.accept(episode.gold_reply())
    return requests


@pytest.mark.parametrize("key", sorted(real_templates()))
def test_every_template_renders_every_gold_step_of_the_sample(key: str) -> None:
    renderer = PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"], name=key), model_id=key)
    requests = _gold_path_requests()
    assert len(requests) > 50
    for messages, tools in requests:
        text = renderer.render_text(messages, tools)
        # The step's newest message is in the prompt (some templates JSON-quote tool results once more).
        fragment = messages[-1]["content"].strip()[:40]
        assert fragment in text or json.dumps(fragment, ensure_ascii=False)[1:-1] in text
