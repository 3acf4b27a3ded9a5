"""The oracle through the 2026 templates of GLM-4.7, GigaChat3/3.1, MiniMax-M3, Hy3, Laguna, Cohere2MoE and
Kimi-K3, and through the renderers of DeepSeek-V3.2/V4/V4.1 and Kimi-K3: 100% with zero `format` fallbacks
(as tests/run/test_oracle_templates.py does for the earlier families). A tiny tokenizer carrying the
template is written to a directory named after the model; for a renderer family the renderer is chosen by the
model id whatever the tokenizer carries. Every gold reply of the sample is cut out of the template's own
rendering, parsed and judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.run.oracle_runs import assert_read_back_whole, oracle_run

ROOT = Path(__file__).resolve().parents[2]
VERBATIM = json.loads((ROOT / "tests" / "fixtures" / "rendering" / "2026" / "fam_a_templates.json")
                      .read_text(encoding="utf-8"))

# model directory name -> (template the tokenizer carries, parser the run selects, template the run uses);
# LongCat ships no template: its run has no tokenizer on disk and every reply is written by the parser
EXPECTED: dict[str, tuple[str | None, str, str | None]] = {
    "zai-org/GLM-4.7-Flash": ("zai-org/GLM-4.7-Flash", "glm47", "tokenizer"),
    "ai-sage/GigaChat3-10B-A1.8B": ("ai-sage/GigaChat3-10B-A1.8B", "gigachat3", "tokenizer"),
    "ai-sage/GigaChat3.1-10B-A1.8B": ("ai-sage/GigaChat3.1-10B-A1.8B", "gigachat3", "tokenizer"),
    "MiniMaxAI/MiniMax-M3": ("MiniMaxAI/MiniMax-M3", "minimax_m3", "tokenizer"),
    "tencent/Hy3": ("tencent/Hy3", "hy_v3", "tokenizer"),
    "poolside/Laguna-XS.2": ("poolside/Laguna-XS.2", "poolside_v1", "tokenizer"),
    "poolside/Laguna-S-2.1": ("poolside/Laguna-S-2.1", "poolside_v1", "tokenizer"),
    "CohereLabs/north-mini-code": ("Cohere2MoE (llama.cpp Cohere2MoE.jinja, 'North Code')", "cohere_command",
                                   "tokenizer"),
    "someone/k3-finetune": ("moonshotai/Kimi-K3", "kimi_k3", "tokenizer"),
    "deepseek-ai/DeepSeek-V3.2": ("renderer:deepseek_v32", "deepseek_v32", "renderer:deepseek_v32"),
    "deepseek-ai/DeepSeek-V4-Flash": ("renderer:deepseek_v4", "deepseek_v4", "renderer:deepseek_v4"),
    "deepseek-ai/DeepSeek-V4.1": ("renderer:deepseek_v41", "deepseek_v41", "renderer:deepseek_v41"),
    "moonshotai/Kimi-K3": ("moonshotai/Kimi-K3", "kimi_k3", "renderer:kimi_k3"),
    "meituan-longcat/LongCat-Flash-Chat": (None, "longcat", None),
}
# GigaChat's templates show one call per assistant message (the probe splits parallel calls), so the
# sample's 9 gold replies with parallel calls cannot be cut out of one rendered turn: the parser's `format`
# writes them (several `<|function_call|>` calls in one reply), and they read back and score like the rest.
FORMAT_FALLBACKS = {"ai-sage/GigaChat3-10B-A1.8B": 9, "ai-sage/GigaChat3.1-10B-A1.8B": 9,
                    "meituan-longcat/LongCat-Flash-Chat": 74}
# The parsers these runs cover (tests/run/test_oracle_templates.py counts them among every parser's).
PARSERS = {parser for _, parser, _ in EXPECTED.values()}


def _template(key: str) -> str:
    if key.startswith("renderer:"):
        return (ROOT / "chat_templates" / f"{key.removeprefix('renderer:')}.jinja").read_text(encoding="utf-8")
    return VERBATIM[key]["chat_template"]


@pytest.mark.parametrize("model", sorted(EXPECTED))
def test_oracle_through_the_template_scores_100_percent(model: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers import build_tiny_model

    key, parser, source = EXPECTED[model]
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # no tokenizer of a hub id is on disk, none fetched
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model_dir = build_tiny_model(tmp_path / model, _template(key)) if key else model
    assert_read_back_whole(oracle_run(model_dir, tmp_path / "run"), parser, source, FORMAT_FALLBACKS.get(model, 0))
