"""The effective thinking mode is read from the rendered generation prompt (real templates), recorded in the
manifest, picks the paper's row and the default generation budget; steps cut at the token limit are
counted (overall and inside reasoning) in the run summary, the manifest and `report`'s run health."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.rendering.conftest import make_tokenizer, real_templates
from tests.run.conftest import RESULT_NAME, chat_template
from wtb_local.benchmark.scoring.length_cuts import cuts_line, cuts_warning, length_cuts
from wtb_local.run.setup.thinking import (
    NON_THINKING_MAX_NEW_TOKENS,
    THINKING_MAX_NEW_TOKENS,
    default_max_new_tokens,
    effective_thinking,
)

REPO = Path(__file__).resolve().parents[2]

# Effective mode of each real template rendered without --thinking/--no-thinking (the template's default).
DEFAULT_MODE = {
    "Qwen/Qwen2.5-7B-Instruct": False,
    "Qwen/Qwen3-0.6B": True,  # thinks unless enable_thinking=false
    "meta-llama/Llama-3.1-8B-Instruct": False,
    "meta-llama/Llama-3.2-3B-Instruct": False,
    "meta-llama/Llama-3.3-70B-Instruct": False,
    "deepseek-ai/DeepSeek-V3.1": False,  # `thinking` defaults to false: the prompt ends with </think>
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": True,  # pre-fills <think>
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": True,
    "moonshotai/Kimi-K2-Instruct": False,
    "zai-org/GLM-4.6": True,
    "openai/gpt-oss-120b": True,  # harmony always reasons
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": False,
    "MiniMaxAI/MiniMax-M2": True,
    "ByteDance-Seed/Seed-OSS-36B-Instruct": True,  # thinking_budget unset = unlimited
    "ibm-granite/granite-3.3-2b-instruct": False,
    "ibm-granite/granite-4.0-h-small": False,
    "mistralai/Mistral-Nemo-Instruct-2407": False,
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506": False,
    "NousResearch/Hermes-2-Pro-Llama-3-8B::tool_use": False,
    "deepseek-ai/DeepSeek-V3-0324::vllm": False,
    "deepseek-ai/DeepSeek-R1-0528::vllm": True,  # the format always reasons
    "deepseek-ai/DeepSeek-V3.1::vllm": False,
    "Team-ACE/ToolACE-2-8B::vllm": False,
    "Salesforce/Llama-xLAM-2-8b-fc-r::vllm": False,
    "Salesforce/xLAM-2-32b-fc-r::vllm": False,
    "meta-llama/Llama-3.1-8B-Instruct::vllm": False,
    "meta-llama/Llama-3.2-3B-Instruct::vllm-pythonic": False,
    "meta-llama/Llama-4-Scout-17B-16E-Instruct::vllm": False,
    "google/gemma-3-27b-it::vllm": False,
    "microsoft/Phi-4-mini-instruct::vllm": False,
    "tencent/Hunyuan-A13B-Instruct::vllm": True,
    "mistralai/Mistral-7B-Instruct-v0.3::vllm-parallel": False,
    "ibm-granite/granite-3.0-8b-instruct::vllm": False,
    "NousResearch/Hermes-2-Pro-Llama-3-8B::vllm": False,
    "MadeAgents/Hammer2.1-7b": False,
    "NousResearch/Hermes-3-Llama-3.1-8B::tool_use": False,
    "Qwen/QwQ-32B": True,  # pre-fills <think>
    "google/gemma-3-27b-it": False,
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": False,
    "microsoft/Phi-4-mini-instruct": False,
}
# Templates with a switch that --thinking/--no-thinking flips (gpt-oss reasons at any effort).
SWITCHED = {
    "Qwen/Qwen3-0.6B": ("enable_thinking=true", "closes an empty reasoning block"),
    "zai-org/GLM-4.6": ("enable_thinking=true", "closes an empty reasoning block"),
    "tencent/Hunyuan-A13B-Instruct::vllm": ("enable_thinking=true", "closes an empty reasoning block"),
    "deepseek-ai/DeepSeek-V3.1": ("pre-fills an open reasoning block", "thinking=false"),
    "ByteDance-Seed/Seed-OSS-36B-Instruct": ("thinking_budget=-1", "thinking_budget=0"),
    "openai/gpt-oss-120b": ("harmony format always reasons", "harmony format always reasons"),
}


def _mode(key: str, thinking: bool | None) -> Any:
    from wtb_local.formats.parsers import select_parser
    from wtb_local.formats.rendering.renderer import PromptRenderer

    model = key.split("::", 1)[0]
    renderer = PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"], name=model), model_id=model,
                              thinking=thinking)
    return effective_thinking(renderer, parser=select_parser(model, chat_template=renderer.template),
                              model_id=model, asked=thinking)


def test_every_real_template_has_an_expected_default_mode() -> None:
    assert sorted(DEFAULT_MODE) == sorted(real_templates())


@pytest.mark.parametrize("key", sorted(DEFAULT_MODE))
def test_default_mode_is_read_from_the_generation_prompt(key: str) -> None:
    mode = _mode(key, None)
    assert (mode.effective, mode.asked) == (DEFAULT_MODE[key], None), mode.evidence


@pytest.mark.parametrize("key", sorted(SWITCHED))
def test_thinking_flags_change_the_effective_mode(key: str) -> None:
    on, off = _mode(key, True), _mode(key, False)
    assert on.effective is True and SWITCHED[key][0] in on.evidence, on.evidence
    expected_off = key == "openai/gpt-oss-120b"  # reasoning_effort=low still reasons
    assert off.effective is expected_off and SWITCHED[key][1] in off.evidence, off.evidence


def test_qwen3_default_evidence_names_the_switch() -> None:
    mode = _mode("Qwen/Qwen3-0.6B", None)
    assert mode.evidence == "the generation prompt is the one the template renders with enable_thinking=true"


def test_no_prompt_means_the_request_or_the_format() -> None:
    assert effective_thinking(None, parser="hermes", model_id="m", asked=None).effective is None
    assert effective_thinking(None, parser="hermes", model_id="m", asked=False).effective is False
    assert effective_thinking(None, parser="gpt_oss", model_id="m", asked=None).effective is True


def test_default_budget_depends_on_the_mode() -> None:
    assert (NON_THINKING_MAX_NEW_TOKENS, THINKING_MAX_NEW_TOKENS) == (512, 8192)
    assert [default_max_new_tokens(m) for m in (True, False, None)] == [8192, 512, 512]


def _step(finish: str, *, reasoning: str | None = None, content: str | None = None,
          calls: list[Any] | None = None, errors: list[str] | None = None) -> dict[str, Any]:
    output: dict[str, Any] = {"reasoning_content": reasoning, "content": content, "tool_calls": calls,
                              "finish_reason": finish}
    if errors:
        output["parse_errors"] = errors
    return {"inference_output": output}


def test_length_cuts_count_overall_and_inside_reasoning() -> None:
    steps = [
        _step("length", reasoning="still thinking"),  # inside reasoning
        _step("length", reasoning="done", errors=["truncated tool call"]),  # cut mid-call: not reasoning
        _step("length", content="a half-written answer"),
        _step("stop", reasoning="r", content="answer"),
        _step("error"),
    ]
    rows = [{"id": "s", "result": [{"inference_log": {f"step_{i}": s for i, s in enumerate(steps)}},
                                   {"inference_log": {"step_0": {"inference_input": {}}}}]}]  # scripted: no reason
    cuts = length_cuts(rows)
    assert cuts == {"steps": 5, "length": 3, "length_in_reasoning": 1, "share": 0.6}
    assert cuts_line(cuts) == "3 of 5 (60.00%), 1 inside reasoning"
    assert cuts_warning(cuts, 512) == (
        "warning: 3 of 5 steps (60.00%, over 5%) ended at the token limit, 1 inside reasoning "
        "(max_new_tokens was 512): the row is lowered by the budget, not only the model; rerun with a larger "
        "--max-new-tokens into a new --out")
    assert cuts_warning({"steps": 20, "length": 1, "length_in_reasoning": 0, "share": 0.05}, 512) is None
    assert length_cuts([]) == {"steps": 0, "length": 0, "length_in_reasoning": 0, "share": 0.0}


# --- end to end: the real command in a subprocess ----------------------------------------------------------


@pytest.fixture(scope="module")
def qwen3_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny models named like Qwen3-8B with Qwen3's real template: one that answers, one whose every token
    is `<think>` (every step thinks until the token limit)."""
    from tests.helpers import build_tiny_model

    root = tmp_path_factory.mktemp("qwen3")
    template = chat_template("Qwen/Qwen3-0.6B")
    specials = ["<tool_call>", "</tool_call>", "<think>", "</think>"]
    return {
        "plain": build_tiny_model(root / "plain" / "Qwen3-8B", template, special_tokens=specials, arch="qwen3",
                                  max_position_embeddings=8192),
        "thinker": build_tiny_model(root / "thinker" / "Qwen3-8B", template, special_tokens=specials,
                                    arch="qwen3", max_position_embeddings=8192, fixed_logits={"<think>": 60.0}),
    }


def _wtb(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "HF_HUB_OFFLINE": "1", "WTB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], capture_output=True, text=True, env=env,
                          timeout=600, cwd=REPO, check=False)


def _paper_rows(stdout: str) -> list[str]:
    return sorted({line.split()[1] for line in stdout.splitlines() if line.startswith("paper: ")})


def test_qwen3_without_flag_records_thinking_and_picks_the_thinking_row(qwen3_dirs: dict[str, Path],
                                                                        tmp_path: Path) -> None:
    model = str(qwen3_dirs["plain"])
    base = ["run", "--model", model, "--backend", "oracle", "--dataset", "sample", "--limit", "1",
            "--progress", "none"]
    done = _wtb(*base, "--out", str(tmp_path / "default"))
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "default" / "manifest.json").read_text())
    assert manifest["thinking"] == {
        "effective": True, "asked": None,
        "evidence": "the generation prompt is the one the template renders with enable_thinking=true"}
    assert manifest["config"]["sampling"]["max_new_tokens"] == 8192
    assert manifest["max_new_tokens_from"] == "the default with thinking on"
    assert _paper_rows(done.stdout) == ["Qwen3-8B-Thinking"]

    off = _wtb(*base, "--no-thinking", "--out", str(tmp_path / "off"))
    assert off.returncode == 0, off.stderr
    manifest = json.loads((tmp_path / "off" / "manifest.json").read_text())
    assert manifest["thinking"]["effective"] is False and manifest["thinking"]["asked"] is False
    assert manifest["config"]["sampling"]["max_new_tokens"] == 512
    assert _paper_rows(off.stdout) == ["Qwen3-8B"]

    budget = _wtb(*base, "--max-new-tokens", "300", "--out", str(tmp_path / "budget"))
    assert budget.returncode == 0, budget.stderr
    manifest = json.loads((tmp_path / "budget" / "manifest.json").read_text())
    assert (manifest["config"]["sampling"]["max_new_tokens"], manifest["max_new_tokens_from"]) == (300, "given (--max-new-tokens)")

    # report and score follow the recorded mode too.
    report = _wtb("report", str(tmp_path / "default"), str(tmp_path / "off"), "--table", "6")
    assert report.returncode == 0, report.stderr
    assert _paper_rows(report.stdout) == ["Qwen3-8B", "Qwen3-8B-Thinking"]
    result = tmp_path / "default" / "result" / Path(model).name / RESULT_NAME  # a local directory's own name
    scored = _wtb("score", str(result), "--dataset", "sample", "--out", str(tmp_path / "s"))
    assert scored.returncode == 0, scored.stderr
    assert _paper_rows(scored.stdout) == ["Qwen3-8B-Thinking"]


def test_steps_cut_inside_reasoning_are_counted_and_warned_about(qwen3_dirs: dict[str, Path],
                                                                 tmp_path: Path) -> None:
    out = tmp_path / "cut"
    done = _wtb("run", "--model", str(qwen3_dirs["thinker"]), "--backend", "transformers", "--dataset", "sample",
                "--limit", "1", "--max-new-tokens", "3", "--out", str(out), "--progress", "none")
    assert done.returncode == 0, done.stderr
    manifest = json.loads(out.joinpath("manifest.json").read_text())
    cuts = manifest["summary"]["length_cuts"]
    steps = manifest["invocations"][-1]["requests"]
    assert steps > 0 and cuts == {"steps": steps, "length": steps, "length_in_reasoning": steps, "share": 1.0}
    assert (f"steps cut at the token limit: {steps} of {steps} (100.00%), {steps} inside reasoning "
            "(max_new_tokens 3)") in done.stdout.splitlines()
    assert (f"warning: {steps} of {steps} steps (100.00%, over 5%) ended at the token limit, {steps} inside "
            "reasoning (max_new_tokens was 3)") in done.stderr

    report = _wtb("report", str(out))
    assert report.returncode == 0, report.stderr
    label = manifest["config"]["model_name"].replace("/", "_")
    lines = report.stdout.splitlines()
    health = lines[lines.index("Run health: is a low score the model or the run?") + 2].split()
    assert health[0] == label and health[4:6] == [str(steps), str(steps)]  # ended by length, inside reasoning
    assert (f"warning: {label}: {steps} of {steps} steps (100.00%, over 5%) ended at the token limit, {steps} "
            "inside reasoning (max_new_tokens was 3)") in report.stderr
