"""Write the prompts vLLM 0.34's own Python encoders render for Inkling and DeepSeek V4.1 into a fixture, so
the renderers of chat_templates/ are held against them where vLLM 0.34 is not at hand (CI):

    python scripts/vllm034_prompts.py [--vllm DIR] [--out tests/fixtures/rendering/2026h2/vllm034_prompts.json]

DIR is an unpacked vLLM 0.34 wheel (default: $WTB_VLLM034_DIR, else /work/wheels/vllm-0.34.0). Both encoders
are pure Python files, read by their path (the installed vLLM may be another version). Each case keeps its
input (messages, tools, template kwargs) beside vLLM's prompt text, and
tests/rendering/test_renderers_2026h2.py renders the same input with our renderer and compares.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from wtb_local.formats.rendering.adapt import Adaptation, adapt_messages
from wtb_local.formats.rendering.probe import PROBE_TOOLS, probe_messages

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


def conversation() -> list[dict[str, Any]]:
    """A conversation with a system message, reasoning, text beside a call, its result and a follow-up."""
    return [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "Checking.", "reasoning_content": "need the weather",
             "tool_calls": [{"id": "c1", "type": "function", "function": {
                 "name": "get_weather", "arguments": {"city": "Paris", "b": {"z": 1, "a": 2}}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."},
            {"role": "user", "content": "Thanks"}]


def probe() -> list[dict[str, Any]]:
    """The start-up probe's conversation with arguments as mappings, as the probe passes them."""
    return adapt_messages(probe_messages(), Adaptation())


def load(root: Path, relative: str) -> ModuleType:
    path = root / "vllm" / relative
    spec = importlib.util.spec_from_file_location(f"vllm034_{path.stem}", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise SystemExit(f"{path}: not found (pass --vllm, an unpacked vLLM 0.34 wheel)")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class SpellingTokenizer:
    """The encoder writes ids; this stand-in returns each piece as text (the Inkling tokenizer spells
    content_xml `<|unused_200024|>`), so the ids read as the prompt text."""

    def encode_text(self, text: str) -> list[str]:
        return [text]

    def encode_special(self, token: str) -> str:
        return "<|unused_200024|>" if token == "<|content_xml|>" else token


def inkling(encoder: ModuleType, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
            kwargs: dict[str, Any]) -> str:
    return "".join(encoder.render_inkling_messages(copy.deepcopy(messages), SpellingTokenizer(), tools=tools,
                                                   add_generation_prompt=True, **kwargs))


def deepseek_v41(encoder: ModuleType, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 kwargs: dict[str, Any]) -> str:
    """As vLLM 0.34's DeepSeek V4.1 tokenizer wrapper calls the encoder: the tools join the first system
    message (one is added), thinking is on unless switched off, `reasoning_effort` none turns it off."""
    conversation = copy.deepcopy(messages)
    if tools:
        system = next((m for m in conversation if m["role"] == "system"), None)
        if system is None:
            system = {"role": "system", "content": ""}
            conversation.insert(0, system)
        system["tools"] = tools
    thinking = bool(kwargs.get("thinking", True))
    effort = kwargs.get("reasoning_effort")
    if effort == "none":
        thinking, effort = False, None
    return encoder.encode_messages(conversation, thinking_mode="thinking" if thinking else "chat",
                                   reasoning_effort=effort or "high")


def cases() -> list[tuple[str, str, list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any]]]:
    """(case name, renderer, messages, tools, template kwargs)."""
    found: list[tuple[str, str, list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any]]] = [
        ("inkling/probe", "inkling", probe(), PROBE_TOOLS, {}),
        ("inkling/reasoning", "inkling", conversation(), TOOLS, {}),
        ("inkling/effort", "inkling", conversation(), TOOLS, {"reasoning_effort": 0.25}),
        ("inkling/no-tools", "inkling", conversation(), None, {}),
    ]
    for label, messages, tools in (("probe", probe(), PROBE_TOOLS), ("conversation", conversation(), TOOLS)):
        for kwargs in ({}, {"thinking": False}, {"reasoning_effort": "max"}, {"reasoning_effort": 30},
                       {"reasoning_effort": "none"}, {"reasoning_effort": "low"}):
            found.append((f"deepseek_v41/{label}/{json.dumps(kwargs, sort_keys=True)}", "deepseek_v41", messages,
                          tools, kwargs))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm", default=os.environ.get("WTB_VLLM034_DIR", "/work/wheels/vllm-0.34.0"))
    parser.add_argument("--out", default=str(HERE / "tests" / "fixtures" / "rendering" / "2026h2" /
                                                 "vllm034_prompts.json"))
    args = parser.parse_args()
    root = Path(args.vllm)
    encoders = {"inkling": (load(root, "renderers/inkling_encoding.py"), inkling),
                "deepseek_v41": (load(root, "tokenizers/deepseek_v41_encoding.py"), deepseek_v41)}
    version = (root / "vllm" / "_version.py").read_text(encoding="utf-8") if (root / "vllm" / "_version.py").is_file() else ""
    rows = []
    for name, renderer, messages, tools, kwargs in cases():
        encoder, render = encoders[renderer]
        rows.append({"case": name, "renderer": renderer, "messages": messages, "tools": tools, "kwargs": kwargs,
                     "prompt": render(encoder, messages, tools, kwargs)})
    source = {"vllm": "0.34.0" if "0.34.0" in version else version.strip()[-40:],
              "files": ["vllm/renderers/inkling_encoding.py", "vllm/tokenizers/deepseek_v41_encoding.py"],
              "written_by": "scripts/vllm034_prompts.py"}
    Path(args.out).write_text(json.dumps({"source": source, "cases": rows}, ensure_ascii=False, indent=1) + "\n",
                              encoding="utf-8")
    print(f"{args.out}: {len(rows)} prompts")


if __name__ == "__main__":
    main()
