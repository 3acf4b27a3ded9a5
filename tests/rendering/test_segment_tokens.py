"""Piecewise (cached) prompt tokenisation gives exactly the whole-prompt ids, or turns itself off."""

from __future__ import annotations

import pytest

from tests.rendering.conftest import make_tokenizer, real_templates
from wtb_local.formats.rendering.checks import FIRST
from wtb_local.formats.rendering.renderer import PromptRenderer
from wtb_local.formats.rendering.segment_tokens import SegmentEncoder


def _gold_prompts(renderer: PromptRenderer, sessions: int) -> list[str]:
    """Every step's prompt of the sample's first sessions, steered along the gold path."""
    from wtb_local.benchmark.dataset.loader import load_dataset
    from wtb_local.benchmark.evaluator.episode import session_episodes

    texts = []
    for session in load_dataset("sample")[:sessions]:
        for episode in session_episodes(session):
            while not episode.done:
                messages, tools = episode.request()
                texts.append(renderer.render_text(messages, tools))
                episode.accept(episode.gold_reply())
    return texts


@pytest.mark.parametrize("model_id", ["Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"])
def test_piecewise_ids_equal_whole_prompt_ids(model_id: str) -> None:
    template = real_templates()[model_id]["chat_template"]
    renderer = PromptRenderer(make_tokenizer(template, name=model_id), model_id=model_id)
    texts = _gold_prompts(renderer, 8)
    assert len(texts) > FIRST  # past the verified start: the cache alone answers
    whole = [renderer.encode(t) for t in texts]
    assert [renderer.segments.encode(t) for t in texts] == whole
    assert renderer.segments.enabled and renderer.segments.note == ""
    # a second pass is served from the cache and still exact
    assert [renderer.segments.encode(t) for t in texts] == whole


def test_render_uses_the_piecewise_encoder() -> None:
    template = real_templates()["Qwen/Qwen2.5-7B-Instruct"]["chat_template"]
    renderer = PromptRenderer(make_tokenizer(template), model_id="Qwen/Qwen2.5-7B-Instruct")
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "the weather"}]
    rendered = renderer.render(messages, [])
    assert rendered.token_ids == renderer.encode(rendered.text)
    assert renderer.segments.prompts == 1


def _metaspace_first_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    backend.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first")
    trainer = trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>", "<|sep|>"], show_progress=False)
    backend.train_from_iterator(["the weather in the city", "call the tool now"] * 4, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>",
                                   additional_special_tokens=["<|sep|>"])


def test_a_tokenizer_that_is_not_piecewise_runs_uncached_with_exact_ids() -> None:
    # SentencePiece-style "prefix space on the first piece only": the piece after <|sep|> tokenised alone
    # would gain a prefix space. The probe at start finds it: uncached from the first prompt, and no
    # mismatch to report (nothing was taken on trust).
    tokenizer = _metaspace_first_tokenizer()
    encoder = SegmentEncoder(tokenizer)
    assert not encoder.enabled
    assert encoder.note == ("the tokenizer does not tokenise the text between special tokens on its own (e.g. a "
                            "prefix space on the first piece only): prompts tokenised whole")
    text = "the city<|sep|>the tool"
    whole = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    assert encoder._pieces(text) != whole  # what the cache would have given
    assert encoder.encode(text) == whole
    assert encoder.checks.counts["tokenisation"] == [0, 0, 1] and encoder.checks.take() == []
    assert encoder.encode("the weather<|sep|>call") == list(
        tokenizer("the weather<|sep|>call", add_special_tokens=False)["input_ids"])


@pytest.mark.parametrize("model_id", ["Qwen/Qwen3-0.6B", "meta-llama/Llama-3.1-8B-Instruct",
                                      "deepseek-ai/DeepSeek-V3.1"])
def test_continuing_a_conversation_reuses_its_prefix_with_the_same_ids(model_id: str) -> None:
    """Every step's prompt tokenised with its conversation key (the previous step's ids reused up to the
    last shared special token) equals whole-prompt tokenisation, and most characters are reused."""
    from wtb_local.benchmark.dataset.loader import load_dataset
    from wtb_local.benchmark.evaluator.episode import session_episodes

    renderer = PromptRenderer(make_tokenizer(real_templates()[model_id]["chat_template"], name=model_id),
                              model_id=model_id)
    assert renderer.segments.reuse
    total = prompts = 0
    for session in load_dataset("sample"):
        for episode in session_episodes(session):
            while not episode.done:
                text = renderer.render_text(*episode.conversation())
                key = (episode.session_id, episode.task_idx)
                assert renderer.encode_prompt(text, key, episode.session_id) == renderer.encode(text)
                total, prompts = total + len(text), prompts + 1
                episode.accept(episode.gold_reply())
            renderer.forget((episode.session_id, episode.task_idx))
        renderer.forget(None, session.id)
    assert renderer.segments.enabled and renderer.segments.note == ""
    assert renderer.segments._last == {}  # every finished conversation was forgotten
    first_prompts = 8  # one per session: nothing to reuse there
    assert prompts > first_prompts and renderer.segments.reused_chars > 0.5 * total


def test_a_special_token_inside_another_turns_prefix_reuse_off() -> None:
    tokenizer = make_tokenizer("{{ '<|a|>' }}{{ '<|a|>x' }}")
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|a|>", "<|a|>x"]})
    encoder = SegmentEncoder(tokenizer)
    assert not encoder.reuse
    assert encoder.encode("hi<|a|>xy", key="k") == encoder.whole("hi<|a|>xy") and encoder._last == {}
