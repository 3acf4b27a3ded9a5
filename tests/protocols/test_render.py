"""The paper renderer through real chat templates (paper-harness.md §1.1, §2.1, §2.2, §2.3)."""

from __future__ import annotations

import pytest

from tests.protocols.test_prompts import DATE, TOOLS, _after_live_step, _task1
from wtb_local.benchmark.protocols.families import RULES

pytest.importorskip("transformers", reason="transformers is not installed (pip install -e .[hf])")

from tests.rendering.conftest import make_tokenizer, real_templates
from wtb_local.benchmark.protocols.setup import PaperRenderer


def _renderer(model: str, family: str) -> PaperRenderer:
    return PaperRenderer(make_tokenizer(real_templates()[model]["chat_template"]), RULES[family])


def test_qwen25_template_system_line_and_one_tool_response_per_history_step() -> None:
    text = _renderer("Qwen/Qwen2.5-7B-Instruct", "qwen").render_text(_task1(), TOOLS)
    assert text.startswith("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant"
                           "\n\nCurrent Date:" + DATE + "\n\n# Tools")
    assert text.count("<tool_response>") == 1  # the history step's observations are one JSON array
    assert '<tool_call>\n{"name": "getWeather", "arguments": {"city": "Paris"}}\n</tool_call>' in text
    assert text.endswith("<|im_start|>user\nAnd tomorrow in Paris?<|im_end|>\n<|im_start|>assistant\n")


def test_llama31_template_puts_the_date_in_its_header_and_raises_on_parallel_history() -> None:
    """§2.2: no system message, `Today Date:` from date_string; the template raises on an assistant turn
    with several calls, so such a step fails (the harness's server returned an empty answer)."""
    renderer = _renderer("meta-llama/Llama-3.1-8B-Instruct", "llama")
    first = _after_live_step("per_call")[:2]  # task 0 at its first step: no history yet
    text = renderer.render_text(first, TOOLS)
    assert "Cutting Knowledge Date: December 2023\nToday Date: " + DATE in text
    assert "Given the following functions, please respond with a JSON for a function call" in text
    with pytest.raises(Exception, match="only supports single tool-calls"):
        renderer.render_text(_task1(), TOOLS)


def test_hammer_template_renders_the_date_system_and_fenced_history() -> None:
    text = _renderer("MadeAgents/Hammer2.1-7b", "hammer").render_text(_task1(), TOOLS)
    assert "Current Date:" + DATE in text
    assert "You are a helpful assistant." not in text  # the date system message replaces the default
    assert '```\n[{"name": "getWeather", "arguments": {"city": "Paris"}}' in text


def test_render_command_prints_the_paper_prompt(tmp_path) -> None:
    """`render --protocol paper` (subprocess): the exact prompt of a step under the family's rules."""
    import subprocess
    import sys
    from pathlib import Path

    model_dir = tmp_path / "Qwen2.5-tiny"
    make_tokenizer(real_templates()["Qwen/Qwen2.5-7B-Instruct"]["chat_template"]).save_pretrained(model_dir)
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "wtb_local", "render", "--model", str(model_dir), "--protocol",
                           "paper", "--task", "1"], capture_output=True, text=True, cwd=repo, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
                                  "assistant\n\nCurrent Date:2025-01-08 10:00:00 Wednesday\n\n# Tools")
    assert done.stdout.count("<tool_response>") == 1  # task 0's parallel step: one JSON array
    assert "reason: paper protocol: the model's own template (qwen prompt builder)" in done.stderr


def test_qwen25_prompt_shows_a_float_parameter_as_the_dataset_wrote_it() -> None:
    """§2.1 + §2.12: the template gets the dataset's tools; its tools block is their JSON, `"float"` kept."""
    import json

    from tests.protocols.test_prompts import FLOAT_TOOLS, _float_step

    messages, tools = _float_step()
    text = _renderer("Qwen/Qwen2.5-7B-Instruct", "qwen").render_text(messages, tools)
    assert ("<tools>\n" + json.dumps(FLOAT_TOOLS[0], ensure_ascii=False) + "\n</tools>") in text
    assert '"type": "float"' in text and '"type": "number"' not in text
