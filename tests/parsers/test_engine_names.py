"""Every tool-parser name vLLM 0.34 and SGLang 0.5.23 register is served by a parser of ours or a tested alias
(formats/parsers/_engine_names.py). The name lists are the packages' own, extracted once by
scripts/extract_engine_parser_names.py into tests/fixtures/parsers/engine_parser_names.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wtb_local.formats.parsers import get_parser, parser_class
from wtb_local.formats.parsers._engine_names import (
    SGLANG_TOOL_PARSERS,
    SGLANG_VERSION,
    VLLM_TOOL_PARSERS,
    VLLM_VERSION,
    served_by,
)

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "parsers" / "engine_parser_names.json")
                     .read_text(encoding="utf-8"))


def test_the_lists_are_the_packages_own() -> None:
    assert (FIXTURE["vllm"]["version"], FIXTURE["sglang"]["version"]) == (VLLM_VERSION, SGLANG_VERSION)
    assert sorted(VLLM_TOOL_PARSERS) == FIXTURE["vllm"]["tool_parsers"]
    assert sorted(SGLANG_TOOL_PARSERS) == FIXTURE["sglang"]["tool_parsers"]
    assert (len(VLLM_TOOL_PARSERS), len(SGLANG_TOOL_PARSERS)) == (62, 44)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_name_is_served(engine: str) -> None:
    names = FIXTURE[engine]["tool_parsers"]
    unserved = [name for name in names if served_by(engine, name) is None]
    assert unserved == []


# what serves each name whose parser of ours has another name (the rest are served by their own name)
RENAMED = {
    ("vllm", "openai"): "gpt_oss", ("vllm", "hunyuan_a13b"): "hunyuan", ("vllm", "phi4_mini_json"): "phi4_mini",
    ("vllm", "llama4_json"): "llama3_json", ("vllm", "llama4_pythonic"): "pythonic",
    ("vllm", "cohere_command3"): "cohere_command", ("vllm", "cohere_command4"): "cohere_command",
    ("vllm", "qwen3_json"): "hermes", ("vllm", "granite_toolcall_parser"): "granite42",
    ("vllm", "granite-20b-fc"): "granite_20b_fc", ("vllm", "zaya_xml"): "zaya",
    ("sglang", "apertus2509"): "apertus", ("sglang", "cohere_command4"): "cohere_command",
    ("sglang", "deepseekv3"): "deepseek_v3", ("sglang", "deepseekv31"): "deepseek_v31",
    ("sglang", "deepseekv32"): "deepseek_v32", ("sglang", "deepseekv4"): "deepseek_v4",
    ("sglang", "deepseekv41"): "deepseek_v41", ("sglang", "glm"): "glm45", ("sglang", "gpt-oss"): "gpt_oss",
    ("sglang", "llama3"): "llama3_json", ("sglang", "qwen"): "hermes", ("sglang", "qwen25"): "hermes",
    ("sglang", "minimax-m2"): "minimax_m2", ("sglang", "minimax-m3"): "minimax_m3",
    ("sglang", "nanbeige"): "qwen3_coder", ("sglang", "interns1"): "internlm", ("sglang", "hunyuan"): "hy_v3",
    ("sglang", "muse"): "muse_glimmer",
    ("vllm", "hf"): "response_template", ("vllm", "musespark"): "muse",
}  # fmt: skip


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_what_serves_each_name(engine: str) -> None:
    for name in FIXTURE[engine]["tool_parsers"]:
        want = RENAMED.get((engine, name), name)
        got = served_by(engine, name)
        assert got == want, (engine, name, got)


@pytest.mark.parametrize(("alias", "target"), [
    ("qwen3_json", "hermes"), ("nanbeige", "qwen3_coder"), ("interns1", "internlm"), ("gpt-oss", "gpt_oss"),
    ("qwen25", "hermes"), ("minimax-m2", "minimax_m2"), ("zaya_xml", "zaya"),
    ("granite_toolcall_parser", "granite42"), ("granite-20b-fc", "granite_20b_fc"), ("apertus2509", "apertus"),
])
def test_aliases_select_the_same_parser(alias: str, target: str) -> None:
    """`--parser ALIAS` builds the parser of the format; an alias reads what its target reads."""
    assert parser_class(alias).name == target
    text = {"hermes": '<tool_call>\n{"name": "f", "arguments": {"a": "x"}}\n</tool_call>',
            "qwen3_coder": "<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n</function>\n</tool_call>",
            }.get(target)
    if text is not None:
        got = get_parser(alias).parse(text)
        assert [(c.name, json.loads(c.arguments)) for c in got.tool_calls] == [("f", {"a": "x"})]


def test_a_registry_name_wins_over_an_sglang_name() -> None:
    """SGLang's `hunyuan` is the Hy3 format; `--parser hunyuan` stays our Hunyuan-A13B parser."""
    assert parser_class("hunyuan").name == "hunyuan" and served_by("sglang", "hunyuan") == "hy_v3"
