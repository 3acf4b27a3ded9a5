"""The tool-call parser names the engines register, and the parser of ours that serves each.

vLLM names are served through each parser's `vllm_names` (or a registry name of the same format); SGLang's
names differ in spelling (`qwen25`, `gpt-oss`, `minimax-m2`) and some are only aliases of another detector
(`nanbeige` is Qwen3-Coder's, `interns1` InternLM's, `hunyuan` the Hy3 one), so they are a table here.
The two lists are the packages' own registries, extracted once by scripts/extract_engine_parser_names.py
into tests/fixtures/parsers/engine_parser_names.json; tests/parsers/test_engine_names.py holds these
constants to that file and checks that every name resolves to a registered parser.
"""

from __future__ import annotations

from wtb_local.formats.parsers.registry import parser_classes

VLLM_VERSION = "0.34.0"
VLLM_TOOL_PARSERS: tuple[str, ...] = (
    "apertus", "beam", "cohere_command3", "cohere_command4", "deepseek_v3", "deepseek_v31", "deepseek_v32",
    "deepseek_v4", "deepseek_v41", "dots", "ernie45", "functiongemma", "gemma4", "gigachat3", "glm45", "glm47",
    "granite", "granite-20b-fc", "granite4", "granite_toolcall_parser", "hermes", "hf", "hunyuan_a13b", "hy_v3",
    "hy_v4", "inkling", "internlm", "jamba", "k2_horizon", "kimi_k2", "kimi_k3", "lfm2", "ling3", "llama3_json",
    "llama4_json", "llama4_pythonic", "longcat", "mimo", "minicpm5", "minimax_m2", "minimax_m3", "mistral",
    "muse", "muse_glimmer", "musespark", "olmo3", "openai", "phi4_mini_json", "plamo3", "poolside_v1",
    "pythonic", "qwen3_coder", "qwen3_json", "qwen3_xml", "ripple", "seed_oss", "step3", "step3p5", "step5",
    "xlam", "zaya", "zaya_xml",
)  # fmt: skip

# vLLM names that are another format's second name (not a parser's own `vllm_names`)
VLLM_ALIASES: dict[str, str] = {
    "qwen3_json": "hermes",  # vLLM registers its Hermes parser under this name too
}

SGLANG_VERSION = "0.5.23"
# SGLang name -> the parser of ours that reads the same format
SGLANG_TOOL_PARSERS: dict[str, str] = {
    "apertus2509": "apertus", "beam": "beam", "cohere_command4": "cohere_command", "deepseekv3": "deepseek_v3",
    "deepseekv31": "deepseek_v31", "deepseekv32": "deepseek_v32", "deepseekv4": "deepseek_v4",
    "deepseekv41": "deepseek_v41", "dots": "dots", "glm": "glm45", "glm45": "glm45", "glm47": "glm47",
    "gpt-oss": "gpt_oss", "k2_horizon": "k2_horizon", "kimi_k2": "kimi_k2", "kimi_k3": "kimi_k3", "lfm2": "lfm2",
    "ling3": "ling3", "llama3": "llama3_json", "mimo": "mimo", "minicpm5": "minicpm5", "mistral": "mistral",
    "muse": "muse_glimmer", "poolside_v1": "poolside_v1", "pythonic": "pythonic", "qwen": "hermes",
    "qwen25": "hermes", "qwen3_coder": "qwen3_coder", "spark25": "spark25", "step3": "step3",
    "step3p5": "step3p5", "minimax-m2": "minimax_m2", "minimax-m3": "minimax_m3", "nanbeige": "qwen3_coder",
    "trinity": "trinity", "interns1": "internlm", "hermes": "hermes", "hunyuan": "hy_v3",
    "gigachat3": "gigachat3", "gigachat35": "gigachat35", "gemma4": "gemma4", "inkling": "inkling",
    "iquest_q1": "iquest_q1", "response_template": "response_template",
}  # fmt: skip


def served_by(engine: str, name: str) -> str | None:
    """The registered parser of ours that serves `engine`'s ("vllm" or "sglang") parser `name`; None when
    none is registered."""
    registry = parser_classes()
    if engine == "sglang":
        target = SGLANG_TOOL_PARSERS.get(name)
        return target if target in registry else None
    if engine != "vllm":
        raise ValueError(f"unknown engine {engine!r} (vllm or sglang)")
    owners = [n for n, cls in registry.items() if name in cls.vllm_names]
    if name in registry and (not owners or name in owners):
        return name
    if len(owners) == 1:
        return owners[0]
    alias = VLLM_ALIASES.get(name)
    return alias if alias in registry else None


def sglang_alias(name: str) -> str | None:
    """The parser an SGLang-only name (not a registry name, not a vLLM one) selects with `--parser`."""
    if name in parser_classes():
        return None
    return served_by("sglang", name)
