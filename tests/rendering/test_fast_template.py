"""The run's rendering path (FastTemplate, docs/runner-speed.md §2) writes every prompt byte for byte as
transformers' `apply_chat_template` does, and its token ids are whole-prompt tokenisation's: over every
step of every task of the sample, answered with gold replies carrying reasoning, with several real
templates."""

from __future__ import annotations

import pytest

from tests.rendering.conftest import make_tokenizer, real_templates
from wtb_local.benchmark.dataset import load_dataset
from wtb_local.benchmark.evaluator.episode import session_episodes
from wtb_local.formats.rendering.adapt import adapt_messages
from wtb_local.formats.rendering.renderer import FastTemplate, PromptRenderer

TEMPLATES = ["Qwen/Qwen3-0.6B", "Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct",
             "openai/gpt-oss-120b", "mistralai/Mistral-Nemo-Instruct-2407", "moonshotai/Kimi-K2-Instruct",
             "zai-org/GLM-4.6", "deepseek-ai/DeepSeek-V3.1"]


def _outcome(render, *args):
    try:
        return "ok", render(*args)
    except Exception as exc:  # noqa: BLE001 - both paths must fail alike
        return "raised", f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("key", TEMPLATES)
def test_every_prompt_of_the_sample_equals_apply_chat_template(key: str) -> None:
    renderer = PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"], name=key), model_id=key)
    prompts = 0
    for session in load_dataset("sample", quiet=True):
        for episode in session_episodes(session):
            while not episode.done:
                messages, tools = episode.conversation()
                fast = _outcome(renderer.render_text, messages, tools)
                slow = _outcome(renderer._render_with, renderer.template,
                                adapt_messages(messages, renderer.choice.adaptation), tools)
                assert fast == slow, f"{key}: {episode.session_id} task {episode.task_idx} step {episode.step}"
                # each message reshaped once over the episode's steps (adapt.GrowingAdapter): the same prompt
                grown = _outcome(lambda m, t: renderer.render_text(m, t, grows=True), messages, tools)
                assert grown == slow, f"{key}: {episode.session_id} task {episode.task_idx} step {episode.step}"
                if fast[0] == "ok":
                    prompts += 1
                    assert renderer.render(messages, tools).token_ids == renderer.encode(fast[1])
                reply = episode.gold_reply()
                if reply.get("tool_calls"):  # reasoning in history: templates drop or keep it by position
                    reply = {**reply, "reasoning_content": f"Thinking about step {episode.step}."}
                episode.accept(reply)
    assert prompts > 60
    assert renderer._fast.note == "" and renderer._fast.renders == 3 * prompts  # render_text twice, render


def test_a_difference_turns_the_fast_path_off_and_says_so() -> None:
    key = "Qwen/Qwen3-0.6B"
    tokenizer = make_tokenizer(real_templates()[key]["chat_template"], name=key)
    renderer = PromptRenderer(tokenizer, model_id=key)
    fast = FastTemplate(renderer._render_with, tokenizer, renderer.template, {"enable_thinking": False})
    messages, tools = session_episodes(load_dataset("sample", quiet=True)[0])[0].request()
    # the slow path renders with the renderer's own variables, the fast one was given others: they differ
    text = fast.render(adapt_messages(messages, renderer.choice.adaptation), tools, add_generation_prompt=True)
    assert text == renderer.render_text(messages, tools)  # the reference is what comes back
    assert "differed from apply_chat_template at rendering 1" in fast.note
    assert fast.render(adapt_messages(messages, renderer.choice.adaptation), tools,
                       add_generation_prompt=True) == text
