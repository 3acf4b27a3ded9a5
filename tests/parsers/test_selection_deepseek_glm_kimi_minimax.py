"""Auto-selection for the 2026 families DeepSeek-V3.2/V4/V4.1, Kimi-K3, GLM-4.7/5.x, MiniMax-M3, Hy3, Laguna,
LongCat, Cohere Command and GigaChat3: the parser from the model id, from config.json and from the template
(the template first), vLLM's parser names, and the thinking switch a model id implies when no template is at
hand (`plan` without a cached tokenizer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wtb_local.formats.parsers import get_parser, parser_class, select_parser
from wtb_local.formats.rendering.kwargs import thinking_kwargs, thinking_switch

TEMPLATES = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "rendering" / "2026"
                        / "fam_a_templates.json").read_text(encoding="utf-8"))

BY_MODEL_ID = {
    "deepseek-ai/DeepSeek-V3.2": "deepseek_v32",
    "deepseek-ai/DeepSeek-V3.2-Exp": "deepseek_v32",
    "deepseek-ai/DeepSeek-V3.2-Speciale": "deepseek_v32",
    "deepseek-ai/DeepSeek-V4-Flash": "deepseek_v4",
    "deepseek-ai/DeepSeek-V4-Pro": "deepseek_v4",
    "deepseek-ai/DeepSeek-V4-Flash-0731": "deepseek_v4",
    "deepseek-ai/DeepSeek-V4.1": "deepseek_v41",
    "moonshotai/Kimi-K3": "kimi_k3",
    "moonshotai/Kimi-K2.5": "kimi_k2",  # K2.5-K2.7 keep the K2 format (vLLM serves them with kimi_k2)
    "zai-org/GLM-4.7": "glm47",
    "zai-org/GLM-4.7-Flash": "glm47",
    "zai-org/GLM-5": "glm47",
    "zai-org/GLM-5.1": "glm47",
    "zai-org/GLM-4.6": "glm45",
    "MiniMaxAI/MiniMax-M3": "minimax_m3",
    "MiniMaxAI/MiniMax-M2": "minimax_m2",
    "tencent/Hy3": "hy_v3",
    "tencent/Hy3-preview": "hy_v3",
    "poolside/Laguna-XS.2": "poolside_v1",
    "poolside/Laguna-S-2.1": "poolside_v1",
    "meituan-longcat/LongCat-Flash-Chat": "longcat",
    "meituan-longcat/LongCat-Flash-Thinking": "longcat",
    "CohereLabs/c4ai-command-a-03-2025": "cohere_command",
    "CohereLabs/command-a-reasoning-08-2025": "cohere_command",
    "ai-sage/GigaChat3-10B-A1.8B": "gigachat3",
    "ai-sage/GigaChat3.1-702B-A36B": "gigachat3",
    "/models/deepseek-v3.2": "deepseek_v32",
}


@pytest.mark.parametrize("model_id", sorted(BY_MODEL_ID))
def test_select_by_model_id(model_id: str) -> None:
    assert select_parser(model_id) == BY_MODEL_ID[model_id]


BY_CONFIG = [
    ({"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32"}, "deepseek_v32"),
    ({"architectures": ["DeepseekV4ForCausalLM"]}, "deepseek_v4"),
    ({"architectures": ["GlmMoeDsaForCausalLM"]}, "glm47"),
    ({"model_type": "minimax_m3"}, "minimax_m3"),
    ({"architectures": ["LongcatFlashForCausalLM"]}, "longcat"),
    ({"architectures": ["Cohere2MoeForCausalLM"]}, "cohere_command"),
    ({"_name_or_path": "moonshotai/Kimi-K3"}, "kimi_k3"),
    ({"_name_or_path": "tencent/Hy3-preview"}, "hy_v3"),
]


@pytest.mark.parametrize(("config", "name"), BY_CONFIG, ids=[n for _, n in BY_CONFIG])
def test_select_by_config(config: dict, name: str) -> None:
    assert select_parser("/ckpt/step-100", config=config) == name


BY_TEMPLATE = {
    "zai-org/GLM-4.7-Flash": "glm47",
    "ai-sage/GigaChat3-10B-A1.8B": "gigachat3",
    "ai-sage/GigaChat3.1-10B-A1.8B": "gigachat3",
    "MiniMaxAI/MiniMax-M3": "minimax_m3",
    "tencent/Hy3": "hy_v3",
    "poolside/Laguna-XS.2": "poolside_v1",
    "poolside/Laguna-XS-2.1": "poolside_v1",
    "poolside/Laguna-S-2.1": "poolside_v1",
    "Cohere2MoE (llama.cpp Cohere2MoE.jinja, 'North Code')": "cohere_command",
    "moonshotai/Kimi-K3": "kimi_k3",
}


@pytest.mark.parametrize("key", sorted(BY_TEMPLATE))
def test_the_template_decides_before_the_id_and_config(key: str) -> None:
    """A local checkpoint whose path says nothing and whose architecture is another family's (GigaChat3 is a
    DeepseekV3ForCausalLM) gets the parser of the template it renders with."""
    assert sorted(BY_TEMPLATE) == sorted(TEMPLATES)
    template = TEMPLATES[key]["chat_template"]
    assert select_parser("/ckpt/step-100", chat_template=template,
                         config={"architectures": ["DeepseekV3ForCausalLM"]}) == BY_TEMPLATE[key]


def test_vllm_parser_names_select_the_same_parser() -> None:
    for alias, name in [("cohere_command3", "cohere_command"), ("cohere_command4", "cohere_command"),
                        ("glm47", "glm47"), ("deepseek_v41", "deepseek_v41"), ("hy_v3", "hy_v3")]:
        assert parser_class(alias).name == name and get_parser(alias).name == name
    with pytest.raises(ValueError, match="unknown parser 'cohere_command5'"):
        get_parser("cohere_command5")


SWITCHES = {  # model id (no template at hand) -> the switch its family reads, and its off value
    "deepseek-ai/DeepSeek-V3.2": ("thinking", False),
    "deepseek-ai/DeepSeek-V4-Flash": ("thinking", False),
    "moonshotai/Kimi-K3": ("thinking", False),
    "zai-org/GLM-5": ("enable_thinking", False),
    "MiniMaxAI/MiniMax-M3": ("thinking_mode", "disabled"),
    "tencent/Hy3": ("reasoning_effort", "no_think"),
    "poolside/Laguna-XS.2": ("enable_thinking", False),
    "CohereLabs/c4ai-command-a-03-2025": ("reasoning", False),
}


@pytest.mark.parametrize("model_id", sorted(SWITCHES))
def test_thinking_switch_from_the_model_id(model_id: str) -> None:
    switch, off = SWITCHES[model_id]
    assert thinking_switch(model_id, None) == switch
    assert thinking_kwargs(False, model_id=model_id, template=None) == {switch: off}
