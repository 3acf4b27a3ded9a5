"""The tiny model builder: fast, deterministic, loadable, every template special token one id."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from tests.engines.helpers import CHATML, chat_prompt
from tests.helpers import build_tiny_model, template_special_tokens

DEEPSEEK_LIKE = "{{ '<｜User｜>' }}{{ x }}<｜tool▁calls▁begin｜><｜tool▁sep｜>{{ '<｜Assistant｜>' }}"
MISTRAL_LIKE = "[INST]{{ m }}[/INST][TOOL_CALLS]{{ c }}[ARGS]{{ a }} [not_special] [A]"


def _digest(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


def test_template_special_tokens_finds_each_family_shape() -> None:
    assert template_special_tokens(CHATML) == ["<|im_end|>", "<|im_start|>"]
    assert template_special_tokens(DEEPSEEK_LIKE) == sorted(
        ["<｜User｜>", "<｜tool▁calls▁begin｜>", "<｜tool▁sep｜>", "<｜Assistant｜>"])
    assert template_special_tokens(MISTRAL_LIKE) == ["[/INST]", "[ARGS]", "[INST]", "[TOOL_CALLS]"]


def test_build_is_fast_and_deterministic(tmp_path: Path, tiny_model_dir: Path) -> None:
    started = time.perf_counter()
    again = build_tiny_model(tmp_path / "again", CHATML, special_tokens=["<tool_call>", "</tool_call>"])
    assert time.perf_counter() - started < 10
    assert _digest(again) == _digest(tiny_model_dir)
    other_seed = build_tiny_model(tmp_path / "seed1", CHATML, special_tokens=["<tool_call>", "</tool_call>"],
                                  seed=1)
    assert _digest(other_seed)["model.safetensors"] != _digest(tiny_model_dir)["model.safetensors"]
    assert _digest(other_seed)["tokenizer.json"] == _digest(tiny_model_dir)["tokenizer.json"]


def test_model_shape_and_tokenizer(tiny_model_dir: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    cfg = model.config
    assert (cfg.model_type, cfg.hidden_size, cfg.num_attention_heads, cfg.head_dim, cfg.num_hidden_layers) == (
        "qwen2", 128, 2, 64, 2)
    assert cfg.vocab_size == len(tok)
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    for token in ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<|endoftext|>"]:
        ids = tok.encode(f"a{token}b", add_special_tokens=False)
        assert tok.convert_ids_to_tokens(ids).count(token) == 1, token

    rendered = tok.apply_chat_template([{"role": "user", "content": "Hi, 天气?"}], tokenize=False,
                                       add_generation_prompt=True)
    assert rendered == chat_prompt("Hi, 天气?")
    ids = tok.encode(rendered, add_special_tokens=False)
    assert tok.decode(ids, skip_special_tokens=False) == rendered

    generation = json.loads((tiny_model_dir / "generation_config.json").read_text())
    assert generation["eos_token_id"] == tok.eos_token_id
    assert generation["do_sample"] is True and generation["temperature"] == 0.7


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_other_archs_eos_lists_and_bos(tmp_path: Path, arch: str) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = build_tiny_model(tmp_path / arch, "<|start_header_id|>{{ messages }}<|eot_id|>", arch=arch,
                            bos_token="<|begin_of_text|>", eos_token=["<|eot_id|>", "<|eom_id|>"],
                            add_bos_token=True)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    assert model.config.model_type == arch
    eos = json.loads((path / "generation_config.json").read_text())["eos_token_id"]
    assert eos == tok.convert_tokens_to_ids(["<|eot_id|>", "<|eom_id|>"])
    ids = tok.encode("hi", add_special_tokens=True)
    assert ids[0] == tok.bos_token_id and tok.encode("hi", add_special_tokens=False) == ids[1:]


def test_fixed_logits_ignore_the_input(stop_model_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(stop_model_dir)
    model = AutoModelForCausalLM.from_pretrained(stop_model_dir)
    inputs = torch.tensor([[5, 9, 200, 31], [40, 41, 42, 43]])
    with torch.no_grad():
        logits = model(input_ids=inputs).logits
    assert (logits.argmax(-1) == tok.eos_token_id).all()
    assert torch.allclose(logits[:, -1, tok.eos_token_id], torch.tensor(50.0), atol=1e-3)


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown arch"):
        build_tiny_model(tmp_path / "x", CHATML, arch="gpt2")
    with pytest.raises(ValueError, match="needs a bos_token"):
        build_tiny_model(tmp_path / "y", CHATML, add_bos_token=True)
