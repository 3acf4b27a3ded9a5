"""One table of end-of-turn tokens and one stripper shared by the parsers, the renderer and the backends;
one model-id normalizer shared by parser selection, template lookup and the thinking switch."""

from __future__ import annotations

import pytest

from wtb_local.formats.end_of_turn import END_OF_TURN, strip_end_of_turn
from wtb_local.formats.parsers import get_parser

# Parsers that strip end-of-turn tokens before reading (the others' formats never end with one).
STRIPPING_PARSERS = ("glm45", "granite", "granite4", "hermes", "kimi_k2", "llama3_json", "pythonic", "xlam")


def test_strip_end_of_turn() -> None:
    assert strip_end_of_turn("answer<|im_end|>\n<|endoftext|>  ") == "answer"
    assert strip_end_of_turn("answer <|eot_id|>") == "answer "  # only markers and the space between them go
    assert strip_end_of_turn("say <|im_end|> here") == "say <|im_end|> here"  # never inside the text
    assert strip_end_of_turn("plain  ") == "plain  "
    assert strip_end_of_turn("x<|end|>", ["<|end|>", "<|im_end|>"]) == "x"
    # once: exactly the one stop token a backend knows was generated, whitespace kept
    assert strip_end_of_turn("x </s></s>", ["</s>"], once=True) == "x </s>"
    assert strip_end_of_turn("x \n", ["</s>"], once=True) == "x \n"


@pytest.mark.parametrize("name", STRIPPING_PARSERS)
@pytest.mark.parametrize("token", END_OF_TURN)
def test_every_stripping_parser_strips_every_token_of_the_table(name: str, token: str) -> None:
    assert get_parser(name).parse(f"The weather is fine.{token}").content == "The weather is fine."


def test_renderer_and_backends_use_the_same_table_and_stripper() -> None:
    from wtb_local.engines import sampling_defaults
    from wtb_local.formats.parsers import hermes
    from wtb_local.formats.rendering import renderer

    assert renderer.END_OF_TURN is END_OF_TURN and hermes.HermesParser.end_tokens is END_OF_TURN
    assert hermes.strip_end_tokens is strip_end_of_turn
    assert sampling_defaults.strip_trailing("a<|im_end|>", ["<|im_end|>"]) == "a"


def test_one_model_id_normalizer() -> None:
    from wtb_local.formats import model_ids, parsers
    from wtb_local.formats.rendering import kwargs, templates

    assert parsers.normalize_model_id is model_ids.normalize_model_id
    assert templates.normalize_model_id is model_ids.normalize_model_id
    assert kwargs.normalize_model_id is model_ids.normalize_model_id
    assert model_ids.normalize_model_id(" DeepSeek-ai/DeepSeek-V3-0324::vllm ") == "deepseek-ai/deepseek-v3-0324"


@pytest.mark.parametrize(("name", "text", "expected"), [
    # SGLang's gpt-oss and Beam detectors read a call only when <|call|> closes it (reference:135, 2026h2-b:151)
    ("gpt-oss", 'to=functions.f <|constrain|>json<|message|>{}<|call|>', 'to=functions.f <|constrain|>json<|message|>{}<|call|>'),
    ("beam", ' to=f<|channel|>analysis<|message|>x<|call|><|return|>', ' to=f<|channel|>analysis<|message|>x<|call|>'),
    ("hermes", '<tool_call>{}</tool_call><|call|>', '<tool_call>{}</tool_call>'),
])
def test_the_sglang_adapter_keeps_the_frame_closer_its_detector_reads(name: str, text: str, expected: str) -> None:
    from wtb_local.formats.parsers.sglang_native import SglangToolParser

    cls = type("Probe", (SglangToolParser,), {"name": f"sglang:{name}", "sglang_name": name, "executable": "-"})
    assert cls()._strip_end(text) == expected
