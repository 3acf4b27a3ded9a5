"""The oracle through every 2026 template of the Gemma 4, Qwen3.5, Nemotron 3, Granite 4, LFM2, Apertus,
Step-3.5, MiniCPM5 and Olmo 3 families: 100% with zero `format` fallbacks, as test_oracle_templates.py does for the
earlier families (tests/fixtures/rendering/2026/gemma-qwen35-olmo.json; the probe may pick the family's
override, the parser is selected from the chosen template, every gold reply is cut out of the template's
own rendering, parsed and judged)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from tests.run.oracle_runs import assert_read_back_whole, oracle_run

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "rendering" / "2026" / "gemma-qwen35-olmo.json"

# template key -> (parser the run selects, template the probe chooses)
EXPECTED: dict[str, tuple[str, str]] = {
    "LiquidAI/LFM2-8B-A1B": ("lfm2", "override:lfm2"),
    "LiquidAI/LFM2.5-1.2B-Instruct": ("lfm2", "override:lfm2_5"),
    "LiquidAI/LFM2.5-8B-A1B": ("lfm2", "tokenizer"),
    "allenai/Olmo-3-7B-Instruct::vllm": ("olmo3", "tokenizer"),
    "google/gemma-4-31B-it::interleaved": ("gemma4", "tokenizer"),
    "Qwen/Qwen3.5-4B": ("qwen3_coder", "tokenizer"),
    "google/gemma-4-31B-it": ("gemma4", "tokenizer"),
    "ibm-granite/granite-4.0::2026": ("granite4", "tokenizer"),
    "ibm-granite/granite-4.1": ("granite4", "tokenizer"),
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ("qwen3_coder", "tokenizer"),
    "openbmb/MiniCPM5-1B": ("minicpm5", "tokenizer"),
    "stepfun-ai/Step-3.5-Flash": ("step3p5", "tokenizer"),
    "swiss-ai/Apertus-8B-Instruct-2509": ("apertus", "override:apertus"),
}
# Parsers of these families no template reaches: no template of theirs was found in a citable source
# (FunctionGemma, ERNIE 4.5), and Nemotron 3 Super's is not at hand (a
# template of the format selects qwen3_coder, which reads it the same way).
WITHOUT_TEMPLATE = {"functiongemma", "ernie45", "qwen3_xml"}
# Family BOS/EOS literals (templates print bos_token; the EOS ends a completion like the end-of-turn).
_SPECIALS = (
    ("google/gemma-4", "<bos>", "<turn|>"),
    ("LiquidAI/", "<|startoftext|>", "<|im_end|>"),
    ("swiss-ai/", "<s>", "<|assistant_end|>"),
    ("ibm-granite/", None, "<|end_of_text|>"),
)


@lru_cache(maxsize=1)
def _templates() -> dict[str, Any]:
    return json.loads(TEMPLATES.read_text(encoding="utf-8"))


def _specials(model_id: str) -> tuple[str | None, str]:
    for prefix, bos, eos in _SPECIALS:
        if model_id.startswith(prefix):
            return bos, eos
    return None, "<|im_end|>"


def test_every_template_is_covered() -> None:
    assert sorted(EXPECTED) == sorted(_templates())


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_oracle_through_the_template_scores_100_percent(key: str, tmp_path: Path) -> None:
    from tests.helpers import build_tiny_model

    model_id = key.split("::", 1)[0]
    bos, eos = _specials(model_id)
    model_dir = build_tiny_model(tmp_path / model_id, _templates()[key]["chat_template"], bos_token=bos,
                                 eos_token=eos)
    assert_read_back_whole(oracle_run(model_dir, tmp_path / "run"), *EXPECTED[key])
