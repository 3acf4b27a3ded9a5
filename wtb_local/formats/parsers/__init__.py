"""Tool-call parser registry: every module of this package holding a `ToolParser` subclass with a `name`
registers itself (registry.py; nothing to list by hand), plus auto-selection of the parser for a model.

Selection order (`select_parser`): the chat template's markers first (a model's template decides what it
was prompted to write, e.g. Llama-3.2 with a pythonic template writes pythonic calls), then regexes on the
lowercased model id (any `::variant` suffix removed), then `config` hints (architectures / model_type);
within one stage the highest `priority` wins, then the longest matching marker/pattern, then the name.
"""

from __future__ import annotations

import re
import traceback
from functools import cache
from typing import Any

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParseResult
from wtb_local.formats.model_ids import normalize_model_id
from wtb_local.formats.parsers.base import ToolParser
from wtb_local.formats.parsers.registry import parser_classes as _registry

__all__ = [
    "ToolParser",
    "get_parser",
    "normalize_model_id",
    "parse_completion",
    "parse_reply",
    "parser_aliases",
    "parser_class",
    "parser_names",
    "reasoning_calls",
    "select_parser",
]


def parser_names() -> list[str]:
    return list(_registry())


@cache
def _vllm_owners() -> dict[str, tuple[str, ...]]:
    """vLLM parser name -> the registry parsers that mirror it, for vLLM names that are not registry
    names themselves (vLLM's `openai` is wtb_local's `gpt_oss`)."""
    owners: dict[str, list[str]] = {}
    for name, cls in _registry().items():
        for vllm_name in cls.vllm_names:
            if vllm_name not in _registry():
                owners.setdefault(vllm_name, []).append(name)
    return {k: tuple(v) for k, v in sorted(owners.items())}


def parser_aliases() -> dict[str, str]:
    """vLLM names accepted by `--parser` besides the registry names: alias -> registry name."""
    return {alias: names[0] for alias, names in _vllm_owners().items() if len(names) == 1}


def parser_class(name: str) -> type[ToolParser]:
    """The parser registered as `name`, or the one parser mirroring vLLM's parser of that name."""
    from wtb_local.formats.parsers.sglang_native import is_sglang_parser  # deferred: start-up
    from wtb_local.formats.parsers.vllm_native import is_vllm_parser  # deferred: start-up

    if is_vllm_parser(name):
        raise ValueError(f"{name} is vLLM's own parser, built with the run's tokenizer (get_parser)")
    if is_sglang_parser(name):
        raise ValueError(f"{name} is SGLang's own parser, read through its bridge (get_parser)")
    if name in _registry():
        return _registry()[name]
    owners = _vllm_owners().get(name, ())
    if len(owners) == 1:
        return _registry()[owners[0]]
    if owners:
        raise ValueError(f"vLLM parser {name!r} is mirrored by several parsers ({', '.join(owners)}); "
                         "pass one of them")
    # --- second-half 2026 names: vLLM's second names and SGLang's names (formats/parsers/_engine_names.py)
    from wtb_local.formats.parsers._engine_names import VLLM_ALIASES, sglang_alias  # deferred: start-up

    alias = VLLM_ALIASES.get(name) or sglang_alias(name)
    if alias in _registry():
        return _registry()[alias]
    # --- end of the second-half 2026 block
    raise ValueError(f"unknown parser {name!r}; known parsers: {', '.join(parser_names())}")


def get_parser(name: str, *, tokenizer: Any = None, **options: Any) -> ToolParser:
    """An instance of the named parser, or of the one mirroring that vLLM parser name (`options` are
    parser-specific, e.g. `thinking=True`; `thinking="per-step"`: the pre-fill is decided per step, see
    formats/parsers/prefill.py). `vllm:NAME` is the installed vLLM's own parser, read with `tokenizer`
    (formats/parsers/vllm_native.py); `sglang:NAME` is SGLang's, in its own venv (sglang_native.py)."""
    from wtb_local.formats.parsers.prefill import split_options  # deferred: start-up
    from wtb_local.formats.parsers.sglang_native import build as build_sglang  # deferred: start-up
    from wtb_local.formats.parsers.sglang_native import is_sglang_parser  # deferred: start-up
    from wtb_local.formats.parsers.vllm_native import build, is_vllm_parser  # deferred: start-up

    built, per_step = split_options(options)
    parser: ToolParser
    if is_vllm_parser(name):
        parser = build(name, tokenizer, **built)
    elif is_sglang_parser(name):
        parser = build_sglang(name, **built)
    else:
        parser = parser_class(name)(**built)
    parser.per_step_prefill = per_step
    return parser


def _best(matches: list[tuple[int, int, str]]) -> str | None:
    # (priority, specificity, name): highest priority, then longest match, then name for determinism.
    if not matches:
        return None
    return min(matches, key=lambda m: (-m[0], -m[1], m[2]))[2]


def _template_match(template: str) -> str | None:
    matches = []
    for name, cls in _registry().items():
        hits = [len(m) for m in cls.template_markers if m and m in template]
        if hits:
            matches.append((cls.priority, max(hits), name))
    return _best(matches)


def _model_id_match(model_id: str) -> str | None:
    matches = []
    for name, cls in _registry().items():
        hits = [len(p) for p in cls.model_patterns if re.search(p, model_id)]
        if hits:
            matches.append((cls.priority, max(hits), name))
    return _best(matches)


# HF `model_type` (underscores removed, also matched against architectures minus their head suffix) ->
# parser, for local checkpoints whose path says nothing. Used only when the parser is registered.
_MODEL_TYPES = {
    "qwen2": "hermes",
    "qwen3": "hermes",
    "qwen3moe": "hermes",
    "llama": "llama3_json",
    "llama4": "pythonic",
    "gemma3": "pythonic",
    "glm4moe": "glm45",
    "kimik2": "kimi_k2",
    "deepseekv3": "deepseek_v3",
    "gptoss": "gpt_oss",
    "minimaxm2": "minimax_m2",
    "seedoss": "seed_oss",
    "mistral": "mistral",
    # 2026 families (transformers' model types; Nemotron 3's `nemotron_h` is shared with earlier Nemotron-H
    # models and MiniCPM5/FunctionGemma have none of their own, so their ids and templates decide)
    "gemma4": "gemma4",
    "gemma4text": "gemma4",
    "gemma4unified": "gemma4",
    "gemma4unifiedtext": "gemma4",
    "olmo3": "olmo3",
    "apertus": "apertus",
    "qwen35": "qwen3_coder",
    "qwen35text": "qwen3_coder",
    "qwen35moe": "qwen3_coder",
    "qwen35moetext": "qwen3_coder",
    "ernie45": "ernie45",
    "ernie45moe": "ernie45",
    "granitemoehybrid": "granite4",
    "step3p5": "step3p5",
    "step3p7": "step3p5",
    "lfm2": "lfm2",
    "lfm2moe": "lfm2",
    "deepseekv32": "deepseek_v32",
    "deepseekv4": "deepseek_v4",
    "glmmoedsa": "glm47",  # GLM-5 (GLM-4.7 shares GLM-4.5's Glm4Moe architecture: its template decides)
    "minimaxm3": "minimax_m3",
    "longcatflash": "longcat",
    "cohere2moe": "cohere_command",
    # second-half 2026 families and the older engine formats (architectures their sources name)
    "step5": "step5",
    "ricursive": "ripple",
    "jamba": "jamba",
    "interns1": "internlm",
    "internlm2": "internlm",
}
_HEADS = ("forcausallm", "forconditionalgeneration", "model")


def _config_match(config: dict[str, Any]) -> str | None:
    names = [str(config[k]) for k in ("_name_or_path", "name_or_path") if config.get(k)]
    for name in names:
        found = _model_id_match(normalize_model_id(name))
        if found:
            return found
    kinds = [str(config.get("model_type") or "")] + [str(a) for a in config.get("architectures") or []]
    for kind in kinds:
        key = kind.lower().replace("_", "").replace("-", "")
        for head in _HEADS:
            key = key.removesuffix(head)
        if _MODEL_TYPES.get(key) in _registry():
            return _MODEL_TYPES[key]
    return None


def select_parser(
    model_id: str, *, chat_template: str | None = None, config: dict[str, Any] | None = None
) -> str:
    """The parser name for a model; ValueError (suggesting `--parser`) when nothing matches."""
    if chat_template:
        found = _template_match(chat_template)
        if found:
            return found
    found = _model_id_match(normalize_model_id(model_id))
    if found:
        return found
    found = _config_match(config or {})
    if found:
        return found
    raise ValueError(
        f"no tool-call parser matches model {model_id!r}; pass --parser NAME "
        f"(one of: {', '.join(parser_names())})"
    )


def reasoning_calls(parser: ToolParser, reasoning: str | None,
                    tools: list[ToolSchema] | None = None) -> list[Any]:
    """The tool calls written inside a reasoning block (docs/parser-policies.md §1): the block's text read
    by the same parser with thinking off. Empty for parsers not built from options alone (the paper
    protocol's rules count their own)."""
    if not reasoning:
        return []
    try:
        plain = type(parser)(**{**parser.options, "thinking": False})
        return list(plain.parse(reasoning, tools=tools, finish_reason="stop").tool_calls)
    except Exception:  # noqa: BLE001 - a count, never a reason for a step to fail
        return []


def parse_reply(
    parser: ToolParser,
    text: str,
    *,
    tools: list[ToolSchema] | None = None,
    finish_reason: str | None = None,
) -> ParseResult:
    """`parser.parse`, with the calls written inside the reasoning block and in a foreign wrapper counted on
    the result (docs/parser-policies.md §1, §3). A parser that raises is a bug of ours: the exception goes
    to the caller (the run's step driver makes it an internal error, docs/reliability.md)."""
    result = parser.parse(text, tools=tools, finish_reason=finish_reason)
    if not isinstance(result, ParseResult):
        raise TypeError(f"parser returned {type(result).__name__}, not ParseResult")
    if result.reasoning and not result.calls_in_reasoning:
        hidden = reasoning_calls(parser, result.reasoning, tools)
        if hidden:
            result = result.model_copy(update={"calls_in_reasoning": len(hidden)})
    from wtb_local.formats.parsers.deviations import format_deviation  # deferred: start-up

    deviation = format_deviation(parser, text, result, tools)  # docs/parser-policies.md §3
    if deviation is not None:
        result = result.model_copy(update={"format_deviation": deviation})
    return result


def parse_completion(
    parser: ToolParser,
    text: str,
    *,
    tools: list[ToolSchema] | None = None,
    finish_reason: str | None = None,
) -> ParseResult:
    """`parse_reply`, with an exception turned into an error result, for the readers that compare or probe
    parsers outside a run (`parsers compare`, the template probe, the oracle's read-back check), where a
    crash is shown as such. A run never scores it: its step driver calls `parse_reply`."""
    try:
        return parse_reply(parser, text, tools=tools, finish_reason=finish_reason)
    except Exception as exc:  # noqa: BLE001 - shown as the parser's crash, never scored
        where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        loc = f" at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}" if where else ""
        return ParseResult(
            content=(text or "").strip() or None,
            errors=[(f"parser {getattr(parser, 'name', '?')} crashed: {type(exc).__name__}: {exc}{loc}")],
        )
