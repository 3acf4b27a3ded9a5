"""The oracle through every chat template at hand: 100% with zero `format` fallbacks.

For each template of tests/fixtures/rendering/chat_templates.json (the checkpoints' own templates and
vLLM's examples) a tiny tokenizer carrying the template is written to a directory named after the model,
and the oracle runs the whole sample through the normal start-up: the probe (which may pick the family's
override), parser selection from the chosen template, then for every step the gold reply cut out of the
template's own rendering, parsed and judged. 100% task, session and optimal-path accuracy with every reply
written by the template (no reply written by the parser's `format`) means render -> generate-as-text ->
parse -> judge worked in the model's own format.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from tests.run.oracle_runs import assert_read_back_whole, oracle_run
from wtb_local.formats.parsers import parser_names

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "rendering" / "chat_templates.json"

# template key -> (parser the run selects, template the probe chooses)
EXPECTED: dict[str, tuple[str, str]] = {
    "ByteDance-Seed/Seed-OSS-36B-Instruct": ("seed_oss", "tokenizer"),
    "MadeAgents/Hammer2.1-7b": ("hammer", "override:hammer2_1"),
    "MiniMaxAI/MiniMax-M2": ("minimax_m2", "tokenizer"),
    "NousResearch/Hermes-2-Pro-Llama-3-8B::tool_use": ("hermes", "tokenizer"),
    "NousResearch/Hermes-2-Pro-Llama-3-8B::vllm": ("hermes", "tokenizer"),
    "NousResearch/Hermes-3-Llama-3.1-8B::tool_use": ("hermes", "tokenizer"),
    "Qwen/QwQ-32B": ("hermes", "tokenizer"),
    "Qwen/Qwen2.5-7B-Instruct": ("hermes", "tokenizer"),
    "Qwen/Qwen3-0.6B": ("hermes", "tokenizer"),
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": ("qwen3_coder", "tokenizer"),
    "Salesforce/Llama-xLAM-2-8b-fc-r::vllm": ("xlam", "tokenizer"),
    "Salesforce/xLAM-2-32b-fc-r::vllm": ("xlam", "tokenizer"),
    "Team-ACE/ToolACE-2-8B::vllm": ("pythonic", "override:pythonic_llama3"),
    "deepseek-ai/DeepSeek-R1-0528::vllm": ("deepseek_r1", "tokenizer"),
    "deepseek-ai/DeepSeek-V3-0324::vllm": ("deepseek_v3", "override:deepseek_v3"),
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": ("deepseek_r1", "override:deepseek_r1_distill"),
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": ("deepseek_r1", "override:deepseek_r1_distill"),
    "deepseek-ai/DeepSeek-V3.1": ("deepseek_v31", "override:deepseek_v31"),
    "deepseek-ai/DeepSeek-V3.1::vllm": ("deepseek_v31", "override:deepseek_v31"),
    "google/gemma-3-27b-it": ("pythonic", "override:gemma3_pythonic"),
    "google/gemma-3-27b-it::vllm": ("pythonic", "override:gemma3_pythonic"),
    "ibm-granite/granite-3.0-8b-instruct::vllm": ("granite", "tokenizer"),
    "ibm-granite/granite-3.3-2b-instruct": ("granite", "override:granite3_3"),
    "ibm-granite/granite-4.0-h-small": ("granite4", "tokenizer"),
    "meta-llama/Llama-3.1-8B-Instruct": ("llama3_json", "override:llama3_json"),
    "meta-llama/Llama-3.1-8B-Instruct::vllm": ("llama3_json", "override:llama3_json"),
    "meta-llama/Llama-3.2-3B-Instruct": ("llama3_json", "override:llama3_json"),
    "meta-llama/Llama-3.2-3B-Instruct::vllm-pythonic": ("llama3_json", "override:llama3_json"),
    "meta-llama/Llama-3.3-70B-Instruct": ("llama3_json", "override:llama3_json"),
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": ("llama3_json", "tokenizer"),
    "meta-llama/Llama-4-Scout-17B-16E-Instruct::vllm": ("pythonic", "override:llama4_pythonic"),
    "microsoft/Phi-4-mini-instruct": ("phi4_mini", "override:phi4_mini"),
    "microsoft/Phi-4-mini-instruct::vllm": ("phi4_mini", "override:phi4_mini"),
    "mistralai/Mistral-7B-Instruct-v0.3::vllm-parallel": ("mistral", "tokenizer"),
    "mistralai/Mistral-Nemo-Instruct-2407": ("mistral", "tokenizer"),
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506": ("mistral_v11", "tokenizer"),
    "moonshotai/Kimi-K2-Instruct": ("kimi_k2", "tokenizer"),
    "openai/gpt-oss-120b": ("gpt_oss", "override:gpt_oss"),
    "tencent/Hunyuan-A13B-Instruct::vllm": ("hunyuan", "tokenizer"),
    "zai-org/GLM-4.6": ("glm45", "tokenizer"),
}
# No template needs a `format` fallback. The R1 family's used to (vLLM's R1-0528 example: 37, the
# R1-Distill templates: 27 each) while the pre-fill was decided once per run: R1-0528's example pre-fills
# nothing and R1-Distill pre-fills `<think>\n` after a user turn only, so text replies after tool results
# read back as reasoning. The pre-fill is now decided per step from that step's prompt (parsers/prefill.py).
# Family BOS/EOS literals (templates print bos_token; the EOS ends a completion like the end-of-turn).
_SPECIALS = (
    ("meta-llama/Llama-4", "<|begin_of_text|>", "<|eot|>"),
    ("meta-llama/", "<|begin_of_text|>", "<|eot_id|>"),
    ("Team-ACE/", "<|begin_of_text|>", "<|eot_id|>"),
    ("Salesforce/Llama", "<|begin_of_text|>", "<|eot_id|>"),
    ("NousResearch/", "<|begin_of_text|>", "<|im_end|>"),
    ("deepseek-ai/", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("mistralai/", "<s>", "</s>"),
    ("google/", "<bos>", "<end_of_turn>"),
    ("microsoft/", "<s>", "<|end|>"),
    ("openai/", "<|startoftext|>", "<|return|>"),
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
    from tests.run import test_oracle_templates_gemma_qwen35_olmo as gemma_qwen35

    assert sorted(EXPECTED) == sorted(_templates())
    # every parser family runs through at least one template (the 2026 families' in their own test
    # files), or has none at hand
    from tests.run import test_oracle_templates_2026h2_fam_a as h2_a
    from tests.run.test_oracle_templates_2026h2 import PARSERS as FAM_B_2026H2
    from tests.run.test_oracle_templates_deepseek_glm_kimi_minimax import PARSERS as FAM_A_2026

    covered = ({parser for parser, _ in EXPECTED.values()} | {p for p, _ in gemma_qwen35.EXPECTED.values()}
               | FAM_A_2026 | FAM_B_2026H2 | h2_a.PARSERS)
    assert sorted(covered | gemma_qwen35.WITHOUT_TEMPLATE | h2_a.WITHOUT_TEMPLATE) == sorted(parser_names())


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_oracle_through_the_template_scores_100_percent(key: str, tmp_path: Path) -> None:
    from tests.helpers import build_tiny_model

    model_id = key.split("::", 1)[0]
    bos, eos = _specials(model_id)
    model_dir = build_tiny_model(tmp_path / model_id, _templates()[key]["chat_template"], bos_token=bos,
                                 eos_token=eos)
    assert_read_back_whole(oracle_run(model_dir, tmp_path / "run"), *EXPECTED[key])
