"""The oracle backend scores 100% (task, session, optimal path) on the sample for every parser family:
the gold reply is written as the family's raw text and goes through the normal parse → judge path."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.run.conftest import chat_template, invoke, run_files
from wtb_local.formats.parsers import parser_names, select_parser

# A model id per parser family; auto-selection must pick that parser for it (checked below).
REPRESENTATIVE = {
    "deepseek_r1": "deepseek-ai/DeepSeek-R1-0528",
    "deepseek_v3": "deepseek-ai/DeepSeek-V3-0324",
    "deepseek_v31": "deepseek-ai/DeepSeek-V3.1",
    "glm45": "zai-org/GLM-4.5",
    "gpt_oss": "openai/gpt-oss-20b",
    "granite": "ibm-granite/granite-3.3-8b-instruct",
    "granite4": "ibm-granite/granite-4.0-h-small",
    "hammer": "MadeAgents/Hammer2.1-7b",
    "hermes": "Qwen/Qwen3-8B",
    "hunyuan": "tencent/Hunyuan-A13B-Instruct",
    "kimi_k2": "moonshotai/Kimi-K2-Instruct",
    "llama3_json": "meta-llama/Llama-3.1-8B-Instruct",
    "minimax_m2": "MiniMaxAI/MiniMax-M2",
    "mistral": "mistralai/Mistral-7B-Instruct-v0.3",
    "mistral_v11": "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
    "phi4_mini": "microsoft/Phi-4-mini-instruct",
    "pythonic": "Team-ACE/ToolACE-2-8B",
    "qwen3_coder": "Qwen/Qwen3-Coder-30B-A3B-Instruct",
    "seed_oss": "ByteDance-Seed/Seed-OSS-36B-Instruct",
    "xlam": "Salesforce/Llama-xLAM-2-8b-fc-r",
    # 2026 families (Gemma, Qwen3.5, Olmo, ...)
    "apertus": "swiss-ai/Apertus-8B-Instruct-2509",
    "ernie45": "baidu/ERNIE-4.5-21B-A3B-Thinking",
    "functiongemma": "google/functiongemma-270m-it",
    "gemma4": "google/gemma-4-31B-it",
    "lfm2": "LiquidAI/LFM2-8B-A1B",
    "minicpm5": "openbmb/MiniCPM5-1B",
    "olmo3": "allenai/Olmo-3-7B-Instruct",
    "qwen3_xml": "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8",
    "step3p5": "stepfun-ai/Step-3.5-Flash",
    # 2026 families (DeepSeek, Kimi, GLM, MiniMax, ...)
    "cohere_command": "CohereLabs/command-a-reasoning-08-2025",
    "deepseek_v32": "deepseek-ai/DeepSeek-V3.2",
    "deepseek_v4": "deepseek-ai/DeepSeek-V4-Flash",
    "deepseek_v41": "deepseek-ai/DeepSeek-V4.1",
    "gigachat3": "ai-sage/GigaChat3-10B-A1.8B",
    "glm47": "zai-org/GLM-4.7",
    "hy_v3": "tencent/Hy3-preview",
    "kimi_k3": "moonshotai/Kimi-K3",
    "longcat": "meituan-longcat/LongCat-Flash-Chat",
    "minimax_m3": "MiniMaxAI/MiniMax-M3",
    "poolside_v1": "poolside/Laguna-XS.2",
    # second half of 2026 (ids the format collection's sources name; where none does, an id of the
    # family's published naming that the parser's pattern selects: plamo3, spark25, ripple, step5, beam)
    "hy_v4": "tencent/Hy4-preview",
    "ling3": "inclusionAI/Ling-3.0-flash",
    "plamo3": "pfnet/plamo-3-chat",
    "mimo": "XiaomiMiMo/MiMo-V2.5",
    "dots": "dots-studio/dots3-note-prev",
    "granite42": "ibm-granite/granite-4.2-8b",
    "zaya": "Zyphra/ZAYA1-8B",
    "ripple": "ricursive/ripple-chat",
    "step5": "stepfun-ai/Step-5",
    "beam": "beam/beam-chat",
    "trinity": "arcee-ai/Trinity-Large-Thinking",
    "spark25": "spark/spark-2.5-chat",
    "iquest_q1": "IQuestLab/IQuest-Q1",
    "internlm": "internlm/Intern-S1",
    "gigachat35": "ai-sage/GigaChat3.5-432B-A28B",
    "jamba": "ai21labs/AI21-Jamba-Mini-1.7",
    "granite_20b_fc": "ibm-granite/granite-20b-functioncalling",
    "step3": "stepfun-ai/step3",
    # second-half 2026 families (Muse, K2 Horizon, Inkling)
    "inkling": "thinkingmachines/Inkling-Small",
    "k2_horizon": "IFM/K2-Horizon-32B",
    "muse": "meta-models/Muse-Spark",  # no Spark checkpoint id is published: this one exercises its pattern
    "muse_glimmer": "meta-models/Muse-Glimmer-30B",
}
# Parsers no model id selects, with the test that runs the oracle through them instead.
NO_MODEL_ID = {"response_template": ("chosen from a checkpoint's declared response_template: "
                                     "tests/parsers/test_response_template.py::"
                                     "test_a_new_family_declaring_its_format_runs_end_to_end")}


def _assert_perfect(metric: dict) -> None:
    total = metric["total_info"]
    assert total["task"]["accuracy"] == 1.0, total
    assert total["session"]["accuracy"] == 1.0, total
    assert metric["optimal_info"]["Total"]["total_count"] > 0
    assert metric["optimal_info"]["Total"]["accuracy"] == 1.0, metric["optimal_info"]


@pytest.mark.parametrize("parser", [name for name in parser_names() if name not in NO_MODEL_ID])
def test_oracle_scores_100_percent_for_every_parser(
    parser: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert parser in REPRESENTATIVE, f"add a representative model id for parser {parser!r}"
    model = REPRESENTATIVE[parser]
    assert select_parser(model) == parser
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # never look for the tokenizer online
    result = invoke(
        [
            "--backend",
            "oracle",
            "--model",
            model,
            "--dataset",
            "sample",
            "--out",
            str(tmp_path),
            "--progress",
            "none",
        ]
    )
    assert result.exit_code == 0, result.output
    files = run_files(tmp_path, model.replace("/", "_"))
    _assert_perfect(files["metric"])
    manifest = (tmp_path / "manifest.json").read_text()
    assert f'"parser": "{parser}"' in manifest
    # no tokenizer on disk: this is the parser-format path, every reply written by `format` (the path
    # through the family's own template is tests/run/test_oracle_templates.py, with zero of these)
    backend = json.loads(manifest)["backend"]
    assert (backend["writer"], backend["template_cuts"], backend["format_fallbacks"]) == ("parser format", 0, 74)
    # the raw completion text is kept on every step
    steps = [
        step
        for row in files["result"]
        for task in row["result"]
        for key, step in task["inference_log"].items()
        if key.startswith("step_")
    ]
    assert steps and all("raw" in s["inference_output"] for s in steps)


def test_oracle_writes_through_the_chat_template(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    """With a tokenizer at hand the gold reply is cut out of the model's own template rendering."""
    from wtb_local.run import RunOptions, run_job_async

    settings = RunOptions(
        backend="oracle", model=str(qwen_tiny_dir), dataset="sample", out=str(tmp_path), progress="none"
    )
    outcome = asyncio.run(run_job_async(settings))
    _assert_perfect(outcome.metric)
    described = outcome.manifest["backend"]
    assert outcome.settings.parser == "hermes"
    assert described["template_cuts"] > 0 and described["format_fallbacks"] == 0
    assert outcome.manifest["template"]["source"] == "tokenizer"


@pytest.mark.parametrize("model_id", ["Qwen/Qwen3-0.6B", "moonshotai/Kimi-K2-Instruct"])
def test_oracle_through_other_real_templates(model_id: str, tmp_path: Path) -> None:
    from tests.helpers import build_tiny_model
    from wtb_local.run import RunOptions, run_job_async

    model_dir = build_tiny_model(tmp_path / "model", chat_template(model_id))
    parser = select_parser(model_id)
    settings = RunOptions(
        backend="oracle",
        model=str(model_dir),
        parser=parser,
        dataset="sample",
        out=str(tmp_path / "run"),
        progress="none",
        limit=4,
    )
    outcome = asyncio.run(run_job_async(settings))
    _assert_perfect(outcome.metric)
    assert outcome.manifest["backend"]["template_cuts"] > 0
    assert outcome.manifest["backend"]["format_fallbacks"] == 0


def test_run_prints_our_row_and_the_papers_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = invoke(
        [
            "--backend",
            "oracle",
            "--model",
            "Qwen/Qwen2.5-7B-Instruct",
            "--model-name",
            "my-qwen",
            "--dataset",
            "sample",
            "--limit",
            "2",
            "--out",
            str(tmp_path),
            "--progress",
            "none",
        ]
    )
    assert result.exit_code == 0, result.output
    table6 = result.output.split("Table 6", 1)[1].split("Table 7", 1)[0]
    assert "my-qwen" in table6 and "paper: Qwen2.5-7B-Instruct" in table6
    assert (tmp_path / "score" / "my-qwen" / "Wild-Tool-Bench_metric.json").exists()
    # Two sample sessions are not the paper's 256: the comparison is flagged.
    assert "note: 2 of the release's 256 sessions were scored (dataset: sample)" in result.output


def test_template_kwargs_and_thinking_flags(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    import json

    base = [
        "--backend",
        "oracle",
        "--model",
        str(qwen_tiny_dir),
        "--dataset",
        "sample",
        "--limit",
        "1",
        "--progress",
        "none",
    ]
    ok = invoke(
        [
            *base,
            "--out",
            str(tmp_path / "a"),
            "--template-kwarg",
            "custom_flag=1",
            "--template-kwarg",
            "style=plain",
        ]
    )
    assert ok.exit_code == 0, ok.output
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["template_kwargs"] == {"custom_flag": 1, "style": "plain"}
    assert manifest["config"]["template_kwargs"] == {"custom_flag": 1, "style": "plain"}
    # Qwen2.5's template has no thinking switch: asking for one is refused instead of silently ignored
    refused = invoke([*base, "--out", str(tmp_path / "b"), "--no-thinking"])
    assert refused.exit_code == 1 and "no thinking switch" in refused.output
    bad = invoke([*base, "--out", str(tmp_path / "c"), "--template-kwarg", "novalue"])
    assert bad.exit_code == 1 and "expected KEY=VALUE" in bad.output
