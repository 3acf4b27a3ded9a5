"""Template resolution and the override files' `models:` declarations."""

from __future__ import annotations

import pytest

from tests.rendering.conftest import OVERRIDES_DIR, real_templates
from wtb_local.formats.rendering.templates import (
    TemplateError,
    chat_templates_dir,
    list_overrides,
    override_for,
    read_model_patterns,
    resolve_template,
)

SERVED = {
    "meta-llama/Llama-3.1-8B-Instruct": "llama3_json",
    "meta-llama/Llama-3.2-1B-Instruct": "llama3_json",
    "meta-llama/Llama-3.3-70B-Instruct": "llama3_json",
    "/models/Llama-3.1-8B-Instruct": "llama3_json",
    "openai/gpt-oss-20b": "gpt_oss",
    "openai/gpt-oss-120b": "gpt_oss",
    "ibm-granite/granite-3.3-8b-instruct": "granite3_3",
    "MadeAgents/Hammer2.1-0.5b": "hammer2_1",
    "Team-ACE/ToolACE-2-8B": "pythonic_llama3",
    "watt-ai/watt-tool-8B": "pythonic_llama3",
    "watt-ai/watt-tool-70B": "pythonic_llama3",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": "llama4_pythonic",
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": "llama4_pythonic",
    "google/gemma-3-27b-it": "gemma3_pythonic",
    "google/gemma-3-4b-it": "gemma3_pythonic",
    "microsoft/Phi-4-mini-instruct": "phi4_mini",
    "deepseek-ai/DeepSeek-V3-0324": "deepseek_v3",
    "deepseek-ai/DeepSeek-V3": "deepseek_v3",
    "MadeAgents/Hammer2.1-7b": "hammer2_1",
    "deepseek-ai/DeepSeek-R1-Distill-Llama-70B": "deepseek_r1_distill",
    "deepseek-ai/DeepSeek-V3.1": "deepseek_v31",
    "deepseek-ai/DeepSeek-V3.1-Terminus": "deepseek_v31",
    "swiss-ai/Apertus-8B-Instruct-2509": "apertus",
    "swiss-ai/Apertus-70B-Instruct-2509": "apertus",
    "LiquidAI/LFM2-8B-A1B": "lfm2",
    "LiquidAI/LFM2-1.2B": "lfm2",
    "LiquidAI/LFM2.5-1.2B-Instruct": "lfm2_5",
    "deepseek-ai/DeepSeek-V3.2": "deepseek_v32",
    "deepseek-ai/DeepSeek-V3.2-Exp": "deepseek_v32",
    "deepseek-ai/DeepSeek-V4-Flash": "deepseek_v4",
    "deepseek-ai/DeepSeek-V4-Pro": "deepseek_v4",
    "deepseek-ai/DeepSeek-V4-Flash-0731": "deepseek_v4",
    "deepseek-ai/DeepSeek-V4.1": "deepseek_v41",
    "moonshotai/Kimi-K3": "kimi_k3",
    "thinkingmachines/Inkling": "inkling",
    "thinkingmachines/Inkling-Small": "inkling",
}
NOT_SERVED = ["Qwen/Qwen3-8B", "Salesforce/Llama-xLAM-2-8b-fc-r", "NousResearch/Hermes-2-Pro-Llama-3-8B",
              "ibm-granite/granite-4.0-h-small", "deepseek-ai/DeepSeek-R1-0528",
              "moonshotai/Kimi-K2-Instruct", "google/gemma-2-9b-it", "microsoft/Phi-4",
              "google/gemma-4-31B-it", "Qwen/Qwen3.5-4B", "openbmb/MiniCPM5-1B"]


def test_overrides_are_found_in_the_shipped_folder() -> None:
    assert chat_templates_dir().resolve() == OVERRIDES_DIR.resolve()
    names = [o.name for o in list_overrides()]
    assert names == sorted(names) == ["apertus", "deepseek_r1_distill", "deepseek_v3", "deepseek_v31",
                                      "deepseek_v32", "deepseek_v4", "deepseek_v41", "gemma3_pythonic",
                                      "gpt_oss", "granite3_3", "hammer2_1", "inkling", "kimi_k3", "lfm2", "lfm2_5",
                                      "llama3_json", "llama4_pythonic", "phi4_mini", "pythonic_llama3"]
    assert all(o.patterns for o in list_overrides())


@pytest.mark.parametrize(("model_id", "name"), sorted(SERVED.items()))
def test_override_serves_its_family(model_id: str, name: str) -> None:
    override = override_for(model_id)
    assert override is not None and override.name == name


@pytest.mark.parametrize("model_id", NOT_SERVED)
def test_other_models_get_no_override(model_id: str) -> None:
    assert override_for(model_id) is None


def test_suffix_is_ignored_when_matching() -> None:
    assert override_for("meta-llama/Llama-3.1-8B-Instruct::vllm").name == "llama3_json"
    assert set(real_templates()) >= {"meta-llama/Llama-3.1-8B-Instruct::vllm"}


def test_resolve_by_name_path_and_error(tmp_path) -> None:
    source, text = resolve_template("gpt_oss")
    assert source == "override:gpt_oss" and text == (OVERRIDES_DIR / "gpt_oss.jinja").read_text(encoding="utf-8")
    path = tmp_path / "t.jinja"
    path.write_text("{{ messages }}", encoding="utf-8")
    assert resolve_template(str(path)) == (f"path:{path}", "{{ messages }}")
    with pytest.raises(TemplateError, match=r"--chat-template 'nope': neither a shipped override \(known: "
                                            r"[\w, ]*deepseek_r1_distill, [\w, ]*\) nor a file"):
        resolve_template("nope")


def test_models_line_is_required_and_checked() -> None:
    assert read_model_patterns("{#-\n  models: a, b\\.c\n-#}\nx") == ("a", "b\\.c")
    with pytest.raises(TemplateError, match="bad.jinja: line 1: field 'models'"):
        read_model_patterns("{{ x }}", origin="bad.jinja")
    with pytest.raises(TemplateError, match="bad regex"):
        read_model_patterns("{# models: ( #}", origin="bad.jinja")


def test_hermes3_template_is_the_lfs_blob() -> None:
    # llama.cpp's Hermes-3 file is known only by its Git LFS pointer: the fixture must be that blob
    import hashlib

    text = real_templates()["NousResearch/Hermes-3-Llama-3.1-8B::tool_use"]["chat_template"].encode("utf-8")
    assert (len(text), hashlib.sha256(text).hexdigest()) == (
        5004, "7ce09d55d3690e06c70b5c07228cc7e8c99c43a23cdc027762be4011efcdea6c")
