"""Our parsers against SGLang's own function-call parsers (`sglang:NAME`, formats/parsers/sglang_native.py) on
the real model outputs the vLLM parity test reads (tests/helpers/vllm_parity.py `samples()`), compared the same
way. SGLang reads no call without declared tools and keeps only calls naming one, so a sample that declares
none is read, by both parsers, with the tools its source's expected calls name declared (an open object
schema each), as a WildToolBench step always declares its tools. tests/parsers/test_sglang_parity.py names
every difference; docs/parser-policies.md §4 shows the counts beside vLLM's."""

from __future__ import annotations

import json
from typing import Any

from tests.helpers.vllm_parity import FILES, Outcome, Sample, our_parser_name, samples

# Our parser -> SGLang's parser of that format (formats/parsers/sglang_native.py MIRRORS, read backwards, with
# the name SGLang's docs give the family where several map to one of ours).
SGLANG_NAME = {
    "apertus": "apertus2509", "cohere_command": "cohere_command4", "deepseek_r1": "deepseekv3",
    "deepseek_v3": "deepseekv3", "deepseek_v31": "deepseekv31", "deepseek_v32": "deepseekv32",
    "deepseek_v4": "deepseekv4", "deepseek_v41": "deepseekv41", "gemma4": "gemma4", "gigachat3": "gigachat3",
    "glm45": "glm45", "glm47": "glm47", "gpt_oss": "gpt-oss", "hermes": "qwen25", "hy_v3": "hunyuan",
    "kimi_k2": "kimi_k2", "kimi_k3": "kimi_k3", "lfm2": "lfm2", "llama3_json": "llama3", "minicpm5": "minicpm5",
    "minimax_m2": "minimax-m2", "minimax_m3": "minimax-m3", "mistral": "mistral", "mistral_v11": "mistral",
    "poolside_v1": "poolside_v1", "pythonic": "pythonic", "qwen3_coder": "qwen3_coder", "step3p5": "step3p5",
    # the second-half 2026 families SGLang 0.5.23 has a detector for
    "beam": "beam", "dots": "dots", "gigachat35": "gigachat35", "inkling": "inkling", "internlm": "interns1",
    "iquest_q1": "iquest_q1", "k2_horizon": "k2_horizon", "ling3": "ling3", "mimo": "mimo", "muse_glimmer": "muse",
    "spark25": "spark25", "trinity": "trinity",
}
# SGLang's `response_template` detector needs the checkpoint's metadata, which the bridge does not pass: those
# samples are compared with vLLM only.


def _expected_names() -> dict[str, list[str]]:
    names = {}
    for prefix, path in FILES.items():
        for line, row in enumerate(map(json.loads, path.read_text(encoding="utf-8").splitlines()), start=1):
            key = f"{prefix}:{row.get('line', line)}"
            calls = (row.get("expected") or {}).get("tool_calls") if "expected" in row else row.get("expected_calls")
            names[key] = [c["name"] for c in calls or [] if c.get("name")]
    return names


def declared_tools(sample: Sample, expected: dict[str, list[str]]) -> list[dict[str, Any]] | None:
    """The sample's tools, else those its expected calls name (None when it expects no call)."""
    if sample.tools:
        return sample.tools
    names = list(dict.fromkeys(expected.get(sample.key, [])))
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names] or None


def compare(*, skip: set[str] = frozenset()) -> list[Outcome]:
    """Every sample whose family SGLang has a parser for, through ours and through SGLang's."""
    from wtb_local.analysis.commands.parser_comparison import differences
    from wtb_local.formats.parsers import get_parser, parse_completion

    expected = _expected_names()
    outcomes = []
    for sample in samples():
        ours = our_parser_name(sample)
        name = SGLANG_NAME.get(ours)
        if sample.key in skip or name is None:
            continue
        tools = declared_tools(sample, expected)
        mine = parse_completion(get_parser(ours, **sample.options), sample.text, tools=tools,
                                finish_reason=sample.finish_reason)
        theirs = parse_completion(get_parser(f"sglang:{name}", **sample.options), sample.text, tools=tools,
                                  finish_reason=sample.finish_reason)
        crashed = [e for e in theirs.errors if "crashed" in e]
        if crashed:
            outcomes.append(Outcome(sample, ours, name, ["crash"], crashed[0]))
            continue
        view = {"ours": _view(mine), "sglang": _view(theirs)}
        outcomes.append(Outcome(sample, ours, name, differences(theirs, mine), json.dumps(view, ensure_ascii=False)))
    return outcomes


def _view(result: Any) -> dict[str, Any]:
    return {"calls": [[c.name, c.arguments] for c in result.tool_calls], "content": result.content,
            "errors": result.errors}
