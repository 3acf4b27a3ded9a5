"""Write the prompts vLLM 0.34's own Python encoders render for Inkling, DeepSeek V3.2, V4 and V4.1 (and
mistral_common, vLLM's Mistral renderer, for Mistral-Nemo) into a fixture, so
the renderers of chat_templates/ are held against them where vLLM 0.34 is not at hand (CI):

    python scripts/vllm034_prompts.py [--vllm DIR] [--out tests/fixtures/rendering/2026h2/vllm034_prompts.json]

DIR is an unpacked vLLM 0.34 wheel (default: $WTB_VLLM_NEXT, else $WTB_VLLM034_DIR). Both encoders
are pure Python files, read by their path (the installed vLLM may be another version). Each case keeps its
input (messages, tools, template kwargs) beside vLLM's prompt text, and
tests/rendering/test_renderers_2026h2.py renders the same input with our renderer and compares.
"""

from __future__ import annotations

import argparse
import copy
import importlib.metadata
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


def served(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as vLLM's server hands them to the DeepSeek V3.2/V4 wrappers: the request's
    `reasoning_content` renamed `reasoning`, and both set on the parsed assistant message (the encoders read
    `reasoning`)."""
    found = copy.deepcopy(messages)
    for message in found:
        if message["role"] == "assistant" and message.get("reasoning_content") is not None:
            message["reasoning"] = message["reasoning_content"]
    return found


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


def deepseek_v32(encoder: ModuleType, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 kwargs: dict[str, Any]) -> str:
    """As vLLM 0.34's DeepSeek V3.2 tokenizer wrapper calls the encoder: thinking off unless switched on, the
    tools in a new system message put first, earlier reasoning dropped when the last message is a user's."""
    conversation = served(messages)
    if tools:
        conversation.insert(0, {"role": "system", "tools": tools})
    thinking = bool(kwargs.get("thinking", False)) or bool(kwargs.get("enable_thinking", False))
    return encoder.encode_messages(conversation, thinking_mode="thinking" if thinking else "chat",
                                   drop_thinking=conversation[-1]["role"] == "user")


def deepseek_v4(encoder: ModuleType, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                kwargs: dict[str, Any]) -> str:
    """As vLLM 0.34's DeepSeek V4 tokenizer wrapper calls the encoder: the tools join the first system message
    (one is added), thinking is on unless switched off, a string effort maps to none/max/low/high and any
    other effort to high while thinking (none when not)."""
    conversation = served(messages)
    if tools:
        system = next((m for m in conversation if m["role"] == "system"), None)
        if system is None:
            system = {"role": "system"}
            conversation.insert(0, system)
        system["tools"] = tools
    thinking = bool(kwargs.get("thinking")) or bool(kwargs.get("enable_thinking"))
    if "thinking" not in kwargs and "enable_thinking" not in kwargs:
        thinking = True
    mode = "thinking" if thinking else "chat"
    effort = kwargs.get("reasoning_effort")
    if not isinstance(effort, str):
        effort = "high" if thinking else None
    elif effort == "none":
        mode, effort = "chat", None
    elif effort in ("low", "minimal", "medium"):
        effort = "low"
    elif effort != "max":
        effort = "high"
    return encoder.encode_messages(conversation, thinking_mode=mode, drop_thinking=kwargs.get("drop_thinking", True),
                                   reasoning_effort=effort)


MISTRAL_MODEL = "mistralai/Mistral-Nemo-Instruct-2407"


def mistral(encoder: ModuleType | None, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
            kwargs: dict[str, Any]) -> str:
    """As vLLM 0.34 renders a Mistral model in its `mistral` tokenizer mode: mistral_common (a vLLM dependency,
    through transformers' MistralCommonBackend) encodes the OpenAI request with the model's tokenizer file;
    Mistral-Nemo's (tekken_240718) ships with mistral_common. Arguments travel as JSON strings, as a request
    carries them. The prompt is the encoded request's ids decoded with their special tokens."""
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    request = copy.deepcopy(messages)
    for message in request:
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = json.dumps(call["function"]["arguments"], ensure_ascii=False)
    tokenizer = MistralTokenizer.v3(is_tekken=True)
    encoded = tokenizer.encode_chat_completion(ChatCompletionRequest.from_openai(messages=request, tools=tools,
                                                                                 **kwargs))
    return str(tokenizer.decode(encoded.tokens, special_token_policy=SpecialTokenPolicy.KEEP))


def mistral_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as our run hands them to Mistral-Nemo's template: the adaptation its probe chooses
    (arguments as mappings, ids of nine alphanumerics, a call's content empty); without reasoning, which Nemo has none of (mistral_common
    rejects it for this tokenizer version)."""
    found = [{k: v for k, v in m.items() if k not in ("reasoning", "reasoning_content")}
             for m in adapt_messages(messages, Adaptation(ids="mistral"))]
    for message in found:  # text beside a call is refused by mistral_common ("either content or tool_calls")
        if message.get("tool_calls"):
            message["content"] = ""
    return found


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
    # "pending": the last message is a tool result, so the reasoning of the call it answers stays
    for label, messages, tools in (("probe", probe(), PROBE_TOOLS), ("conversation", conversation(), TOOLS),
                                   ("no-tools", conversation(), None), ("pending", conversation()[:4], TOOLS)):
        for kwargs in ({}, {"thinking": True}, {"enable_thinking": True}):
            found.append((f"deepseek_v32/{label}/{json.dumps(kwargs, sort_keys=True)}", "deepseek_v32", messages,
                          tools, kwargs))
        for kwargs in ({}, {"thinking": False}, {"reasoning_effort": "max"}, {"reasoning_effort": "none"},
                       {"reasoning_effort": "low"}, {"reasoning_effort": "high"}):
            found.append((f"deepseek_v4/{label}/{json.dumps(kwargs, sort_keys=True)}", "deepseek_v4", messages,
                          tools, kwargs))
    for label, messages, tools in (("probe", probe(), PROBE_TOOLS), ("conversation", conversation(), TOOLS),
                                   ("no-tools", conversation(), None), ("pending", conversation()[:4], TOOLS)):
        found.append((f"mistral/{label}", "mistral", mistral_messages(messages), tools, {}))
    return found


def kimi_k3_steps(root: Path) -> dict[str, Any]:
    """vLLM 0.34's Kimi K3 renderer (renderers/kimi_k3.py) only prepares the conversation: the encoder itself,
    `encoding_k3`, ships with the model's tokenizer, not with vLLM. Its two pure steps are read out of the file
    (the module imports vLLM 0.34 at large): the tool results reordered to the calls they answer, named and
    numbered (`tool`, `index`), and the thinking switches mapped."""
    import ast

    path = root / "vllm" / "renderers" / "kimi_k3.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wanted = {"_normalize_k3_tool_messages", "_apply_k3_thinking_kwargs"}
    nodes: list[ast.stmt] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    namespace: dict[str, Any] = {"Any": Any, "ConversationMessage": dict, "VLLMValidationError": ValueError}
    exec(compile(ast.Module(body=nodes, type_ignores=[]), str(path), "exec"), namespace)  # noqa: S102
    return namespace


def kimi_k3_tool_cases() -> list[tuple[str, list[dict[str, Any]]]]:
    """Two calls answered in reverse order, by id and by vLLM's `NAME:POSITION` alias; an unknown id; only
    the second call answered."""
    calls = [{"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": {"city": city}}}
             for n, name, city in ((1, "get_weather", "Paris"), (2, "get_time", "Oslo"))]

    def turn(*results: tuple[str, str]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": "Weather and time?"},
                {"role": "assistant", "content": "", "tool_calls": copy.deepcopy(calls)},
                *({"role": "tool", "tool_call_id": rid, "content": text} for rid, text in results)]

    return [("swapped", turn(("c2", "noon"), ("c1", "sunny"))),
            ("alias", turn(("get_time:1", "noon"), ("get_weather:0", "sunny"))),
            ("unknown", turn(("c2", "noon"), ("zz", "sunny"))),
            ("second-only", turn(("c2", "noon")))]


def kimi_k3_records(root: Path) -> list[dict[str, Any]]:
    steps = kimi_k3_steps(root)
    rows: list[dict[str, Any]] = []
    for name, messages in kimi_k3_tool_cases():
        rows.append({"case": f"kimi_k3/{name}", "messages": messages,
                     "normalized": steps["_normalize_k3_tool_messages"](copy.deepcopy(messages))})
    return rows


ENCODERS = {"inkling": "renderers/inkling_encoding.py", "deepseek_v41": "tokenizers/deepseek_v41_encoding.py",
            "deepseek_v32": "tokenizers/deepseek_v32_encoding.py", "deepseek_v4": "tokenizers/deepseek_v4_encoding.py"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm", default=os.environ.get("WTB_VLLM_NEXT") or os.environ.get("WTB_VLLM034_DIR"),
                        required=not (os.environ.get("WTB_VLLM_NEXT") or os.environ.get("WTB_VLLM034_DIR")))
    parser.add_argument("--out", default=str(HERE / "tests" / "fixtures" / "rendering" / "2026h2" /
                                                 "vllm034_prompts.json"))
    args = parser.parse_args()
    root = Path(args.vllm)
    encoders: dict[str, tuple[ModuleType | None, Any]] = {
        name: (load(root, relative), globals()[name]) for name, relative in ENCODERS.items()}
    encoders["mistral"] = (None, mistral)
    version = (root / "vllm" / "_version.py").read_text(encoding="utf-8") if (root / "vllm" / "_version.py").is_file() else ""
    rows = []
    for name, renderer, messages, tools, kwargs in cases():
        encoder, render = encoders[renderer]
        rows.append({"case": name, "renderer": renderer, "messages": messages, "tools": tools, "kwargs": kwargs,
                     "prompt": render(encoder, messages, tools, kwargs)})
    source = {"vllm": "0.34.0" if "0.34.0" in version else version.strip()[-40:],
              "files": [f"vllm/{relative}" for relative in ENCODERS.values()],
              "mistral_common": importlib.metadata.version("mistral_common"),
              "kimi_k3": "vllm/renderers/kimi_k3.py (its tool-message step only)",
              "written_by": "scripts/vllm034_prompts.py"}
    document = {"source": source, "cases": rows, "kimi_k3_tool_messages": kimi_k3_records(root)}
    Path(args.out).write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(rows)} prompts")


if __name__ == "__main__":
    main()
