"""Shared fixtures: the real templates and a tiny local tokenizer that renders them.

The tokenizer is a byte-level BPE (so any template text round-trips) wrapped in PreTrainedTokenizerFast,
with every special-token literal of the template registered as one token: rendering goes through
transformers' own `apply_chat_template`, exactly as for a downloaded model.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rendering"
REPO = Path(__file__).resolve().parents[2]
OVERRIDES_DIR = REPO / "chat_templates"


@lru_cache(maxsize=1)
def real_templates() -> dict[str, dict[str, Any]]:
    return json.loads((FIXTURES / "chat_templates.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _backend() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(["the weather in the city", '{"name": "x", "arguments": {}}'] * 4,
                                  trainer=trainer)
    return tokenizer


def make_tokenizer(chat_template: str | None, *, bos: str = "<s>", eos: str = "</s>",
                   add_bos: bool = False, name: str = "tiny/model") -> Any:
    """A fresh tiny tokenizer carrying `chat_template` (special tokens of the template are single ids)."""
    import copy

    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    from tests.helpers.tiny_model import template_special_tokens

    backend = copy.deepcopy(_backend())
    specials = sorted({bos, eos, *template_special_tokens(chat_template or "")})
    backend.add_special_tokens(specials)
    if add_bos:
        backend.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", special_tokens=[(bos, backend.token_to_id(bos))])
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=bos, eos_token=eos, pad_token="<pad>",
                                  additional_special_tokens=[s for s in specials if s not in (bos, eos)],
                                  clean_up_tokenization_spaces=False)
    tok.chat_template = chat_template
    tok.name_or_path = name
    return tok


@pytest.fixture
def tokenizer_for():
    return make_tokenizer
