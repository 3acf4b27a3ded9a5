"""Parser registry and auto-selection (the selection table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wtb_local.contract.schema import ParseResult
from wtb_local.formats.parsers import (
    get_parser,
    normalize_model_id,
    parse_completion,
    parser_class,
    parser_names,
    select_parser,
)
from wtb_local.formats.parsers.base import ToolParser

TEMPLATES = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "parsers" / "chat_templates.json").read_text(
        encoding="utf-8"
    )
)

# Every template of chat_templates.json -> the parser its format needs (selected from the template).
BY_TEMPLATE = {
    "Qwen/Qwen2.5-7B-Instruct": "hermes",
    "Qwen/Qwen3-0.6B": "hermes",
    "meta-llama/Llama-3.1-8B-Instruct": "llama3_json",
    "meta-llama/Llama-3.2-3B-Instruct": "llama3_json",
    "meta-llama/Llama-3.3-70B-Instruct": "llama3_json",
    "deepseek-ai/DeepSeek-V3.1": "deepseek_v31",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": "deepseek_r1",
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": "deepseek_r1",
    "moonshotai/Kimi-K2-Instruct": "kimi_k2",
    "zai-org/GLM-4.6": "glm45",
    "openai/gpt-oss-120b": "gpt_oss",
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": "qwen3_coder",
    "MiniMaxAI/MiniMax-M2": "minimax_m2",
    "ByteDance-Seed/Seed-OSS-36B-Instruct": "seed_oss",
    "ibm-granite/granite-3.3-2b-instruct": "granite",
    "ibm-granite/granite-4.0-h-small": "granite4",
    "mistralai/Mistral-Nemo-Instruct-2407": "mistral",
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506": "mistral_v11",
    "NousResearch/Hermes-2-Pro-Llama-3-8B::tool_use": "hermes",
    "deepseek-ai/DeepSeek-V3-0324::vllm": "deepseek_v3",
    "deepseek-ai/DeepSeek-R1-0528::vllm": "deepseek_r1",
    "deepseek-ai/DeepSeek-V3.1::vllm": "deepseek_v31",
    "Team-ACE/ToolACE-2-8B::vllm": "pythonic",
    "Salesforce/Llama-xLAM-2-8b-fc-r::vllm": "xlam",
    "Salesforce/xLAM-2-32b-fc-r::vllm": "xlam",
    "meta-llama/Llama-3.1-8B-Instruct::vllm": "llama3_json",
    "meta-llama/Llama-3.2-3B-Instruct::vllm-pythonic": "pythonic",  # the template decides, not the id
    "meta-llama/Llama-4-Scout-17B-16E-Instruct::vllm": "pythonic",
    "google/gemma-3-27b-it::vllm": "pythonic",
    "microsoft/Phi-4-mini-instruct::vllm": "phi4_mini",
    "tencent/Hunyuan-A13B-Instruct::vllm": "hunyuan",
    "mistralai/Mistral-7B-Instruct-v0.3::vllm-parallel": "mistral",
    "ibm-granite/granite-3.0-8b-instruct::vllm": "granite",
    "NousResearch/Hermes-2-Pro-Llama-3-8B::vllm": "hermes",
    "MadeAgents/Hammer2.1-7b": "hammer",
}

# Model ids alone (no template): the paper's open-weight models, then the extras.
BY_MODEL_ID = {
    "Qwen/Qwen2.5-0.5B-Instruct": "hermes",
    "Qwen/Qwen2.5-7B-Instruct": "hermes",
    "Qwen/Qwen2.5-72B-Instruct": "hermes",
    "Qwen/Qwen3-0.6B": "hermes",
    "Qwen/Qwen3-8B": "hermes",
    "Qwen/Qwen3-32B": "hermes",
    "Qwen/Qwen3-30B-A3B": "hermes",
    "Qwen/Qwen3-235B-A22B-Thinking-2507": "hermes",
    "Qwen/QwQ-32B": "hermes",
    "NousResearch/Hermes-3-Llama-3.1-8B": "hermes",
    "meta-llama/Llama-3.1-8B-Instruct": "llama3_json",
    "meta-llama/Meta-Llama-3.1-70B-Instruct": "llama3_json",
    "meta-llama/Llama-3.2-1B-Instruct": "llama3_json",
    "meta-llama/Llama-3.2-3B-Instruct": "llama3_json",
    "meta-llama/Llama-3.3-70B-Instruct": "llama3_json",
    "zai-org/GLM-4.5": "glm45",
    "zai-org/GLM-4.5-Air": "glm45",
    "zai-org/GLM-4.6": "glm45",
    "moonshotai/Kimi-K2-Instruct": "kimi_k2",
    "moonshotai/Kimi-K2-Instruct-0905": "kimi_k2",
    "deepseek-ai/DeepSeek-V3": "deepseek_v3",
    "deepseek-ai/DeepSeek-V3-0324": "deepseek_v3",
    "deepseek-ai/DeepSeek-R1": "deepseek_r1",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek_r1",
    "deepseek-ai/DeepSeek-V3.1": "deepseek_v31",
    "Salesforce/Llama-xLAM-2-8b-fc-r": "xlam",
    "Salesforce/Llama-xLAM-2-70b-fc-r": "xlam",
    "Salesforce/xLAM-2-1b-fc-r": "xlam",
    "Salesforce/xLAM-2-3b-fc-r": "xlam",
    "Salesforce/xLAM-2-32b-fc-r": "xlam",
    "Team-ACE/ToolACE-2-8B": "pythonic",
    "watt-ai/watt-tool-8B": "pythonic",
    "watt-ai/watt-tool-70B": "pythonic",
    "MadeAgents/Hammer2.1-0.5b": "hammer",
    "MadeAgents/Hammer2.1-1.5b": "hammer",
    "MadeAgents/Hammer2.1-3b": "hammer",
    "MadeAgents/Hammer2.1-7b": "hammer",
    # extras
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": "pythonic",
    "google/gemma-3-27b-it": "pythonic",
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": "qwen3_coder",
    "Qwen/Qwen3.5-397B-A17B": "qwen3_coder",
    "mistralai/Mistral-7B-Instruct-v0.3": "mistral",
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506": "mistral_v11",
    "openai/gpt-oss-20b": "gpt_oss",
    "ibm-granite/granite-3.1-8b-instruct": "granite",
    "ibm-granite/granite-4.0-h-tiny": "granite4",
    "microsoft/Phi-4-mini-instruct": "phi4_mini",
    "MiniMaxAI/MiniMax-M2": "minimax_m2",
    "ByteDance-Seed/Seed-OSS-36B-Instruct": "seed_oss",
    "tencent/Hunyuan-A13B-Instruct": "hunyuan",
    # suffixes and local paths
    "deepseek-ai/DeepSeek-V3-0324::vllm": "deepseek_v3",
    "/models/qwen3-8b": "hermes",
}


def test_every_template_key_is_in_the_table() -> None:
    assert sorted(TEMPLATES) == sorted(BY_TEMPLATE)


@pytest.mark.parametrize("model_id", sorted(BY_TEMPLATE))
def test_select_by_template(model_id: str) -> None:
    assert (
        select_parser(model_id, chat_template=TEMPLATES[model_id]["chat_template"]) == BY_TEMPLATE[model_id]
    )


@pytest.mark.parametrize("model_id", sorted(BY_MODEL_ID))
def test_select_by_model_id(model_id: str) -> None:
    assert select_parser(model_id) == BY_MODEL_ID[model_id]


def test_template_without_markers_falls_back_to_the_id() -> None:
    assert select_parser("Qwen/Qwen3-8B", chat_template="{{ messages }}") == "hermes"


def test_config_hints() -> None:
    assert select_parser("/ckpt/step-100", config={"model_type": "qwen3"}) == "hermes"
    assert select_parser("/ckpt/step-100", config={"architectures": ["Glm4MoeForCausalLM"]}) == "glm45"
    assert select_parser("/ckpt/x", config={"_name_or_path": "Salesforce/xLAM-2-3b-fc-r"}) == "xlam"


def test_no_match_suggests_the_option() -> None:
    with pytest.raises(ValueError, match="--parser"):
        select_parser("acme/unknown-model-7b")


def test_normalize_model_id() -> None:
    assert normalize_model_id("DeepSeek-ai/DeepSeek-V3-0324::vllm") == "deepseek-ai/deepseek-v3-0324"


def test_registry_lookup() -> None:
    names = parser_names()
    assert names == sorted(names) and {
        "hermes",
        "llama3_json",
        "pythonic",
        "xlam",
        "hammer",
        "glm45",
        "kimi_k2",
    } <= set(names)
    for name in names:
        cls = parser_class(name)
        assert issubclass(cls, ToolParser) and cls.name == name
    assert get_parser("hermes", thinking=True).options == {"thinking": True}
    with pytest.raises(ValueError, match="known parsers: .*hermes"):
        get_parser("nope")


def test_parse_completion_wraps_exceptions() -> None:
    class Broken(ToolParser):
        name = "broken_for_test"

        def parse(self, text, *, tools=None, finish_reason=None):
            raise KeyError("x")

        def format(self, content, tool_calls, reasoning=None):
            return ""

    result = parse_completion(Broken(), "<tool_call>")
    assert isinstance(result, ParseResult) and result.tool_calls == []
    assert result.errors and "broken_for_test crashed: KeyError" in result.errors[0]
    ok = parse_completion(get_parser("hermes"), "hi")
    assert ok.content == "hi" and ok.errors == []


def test_every_parser_declares_the_vllm_names_it_mirrors() -> None:
    for name in parser_names():
        cls = parser_class(name)
        assert "vllm_names" in vars(cls), f"{name}: declare vllm_names (empty when vLLM has no such parser)"
        assert all(isinstance(v, str) and v for v in cls.vllm_names), name


def test_vllm_names_are_aliases() -> None:
    from wtb_local.formats.parsers import parser_aliases

    assert get_parser("openai").name == "gpt_oss"
    assert get_parser("phi4_mini_json").name == "phi4_mini"
    assert get_parser("llama4_pythonic").name == "pythonic"
    assert parser_class("mistral").name == "mistral"  # a registry name is never an alias
    aliases = parser_aliases()
    assert aliases["openai"] == "gpt_oss" and "hermes" not in aliases
    assert all(alias not in parser_names() for alias in aliases)
    with pytest.raises(ValueError, match="unknown parser 'nope'"):
        parser_class("nope")


def test_a_vllm_name_two_parsers_mirror_is_no_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    import wtb_local.formats.parsers as registry

    class A(ToolParser):
        name = "a"
        vllm_names = ("shared",)

        def parse(self, text, *, tools=None, finish_reason=None):  # type: ignore[override]
            return ParseResult()

        def format(self, content, tool_calls, reasoning=None):  # type: ignore[override]
            return ""

    class B(A):
        name = "b"
        vllm_names = ("shared",)

    monkeypatch.setattr(registry, "_registry", lambda: {"a": A, "b": B})
    registry._vllm_owners.cache_clear()
    try:
        assert registry.parser_aliases() == {}
        with pytest.raises(ValueError, match=r"vLLM parser 'shared' is mirrored by several parsers \(a, b\)"):
            registry.parser_class("shared")
    finally:
        monkeypatch.undo()
        registry._vllm_owners.cache_clear()


@pytest.mark.parametrize(("config", "parser"), [
    ({"model_type": "gemma4"}, "gemma4"), ({"architectures": ["Gemma4ForConditionalGeneration"]}, "gemma4"),
    ({"model_type": "olmo3"}, "olmo3"), ({"model_type": "apertus"}, "apertus"),
    ({"model_type": "qwen3_5"}, "qwen3_coder"), ({"model_type": "qwen3_5_moe"}, "qwen3_coder"),
    ({"model_type": "ernie4_5_moe"}, "ernie45"), ({"model_type": "granitemoehybrid"}, "granite4"),
    ({"model_type": "step3p5"}, "step3p5"), ({"model_type": "lfm2"}, "lfm2"), ({"model_type": "lfm2_moe"}, "lfm2"),
])
def test_2026_model_types(config: dict, parser: str) -> None:
    assert select_parser("/models/local-checkpoint", config=config) == parser


def test_nemotron_h_model_type_alone_decides_nothing() -> None:
    # shared by Nemotron 3 and the earlier Nemotron-H models: the id or the template decides
    with pytest.raises(ValueError, match="no tool-call parser matches"):
        select_parser("/models/local-checkpoint", config={"model_type": "nemotron_h"})


def test_the_docs_count_every_parser() -> None:
    """docs/parsers-and-templates.md names the number of parsers: it is the registry's."""
    import re
    from pathlib import Path

    from wtb_local.formats.parsers import parser_names

    text = (Path(__file__).resolve().parents[2] / "docs" / "parsers-and-templates.md").read_text(encoding="utf-8")
    counted = re.search(r"one module per format behind one interface, (\d+) parsers", text)
    assert counted is not None and int(counted.group(1)) == len(parser_names())


def test_the_readme_counts_every_parser() -> None:
    """The README's feature list names the number of parsers too: it is the registry's."""
    import re
    from pathlib import Path

    from wtb_local.formats.parsers import parser_names

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    counted = re.search(r"\((\d+) parsers, the paper's families", text)
    assert counted is not None and int(counted.group(1)) == len(parser_names())
