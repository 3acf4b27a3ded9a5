"""`vllm:NAME` splits a leading reasoning block off as our parser of that family does, before vLLM's tool
parser reads the rest (wtb_local/formats/parsers/vllm_native.py; vLLM's server runs the family's reasoning parser
there). No vLLM needed: the split is ours. The texts are 2026 samples' shapes (tests/fixtures/parsers/2026)."""

from __future__ import annotations

import pytest

from wtb_local.formats.parsers.vllm_native import _variant

NS = "]<]minimax[>["


@pytest.mark.parametrize(("name", "thinking", "text", "expected"), [
    # MiniMax-M3's <mm:think>, pre-filled or written
    ("minimax_m3", True, "<mm:think>Let me check</mm:think>" + NS + "<tool_call>",
     ("Let me check", NS + "<tool_call>")),
    ("minimax_m3", True, "</mm:think>" + NS + "<tool_call>", (None, NS + "<tool_call>")),
    # Kimi-K3's think channel; a completion opening a channel itself is not inside the pre-filled one
    ("kimi_k3", True, "Thinking<|close|>think<|sep|><|open|>response<|sep|>Hi<|close|>response<|sep|>",
     ("Thinking", "<|open|>response<|sep|>Hi<|close|>response<|sep|>")),
    ("kimi_k3", True, "<|open|>response<|sep|>Hi<|close|>response<|sep|>",
     (None, "<|open|>response<|sep|>Hi<|close|>response<|sep|>")),
    # Gemma 4's channels, the opener pre-filled or written
    ("gemma4", True, " thinking<channel|>Hello", ("thinking", "Hello")),
    ("gemma4", None, "<|channel>thought<channel|>Hello", (None, "Hello")),
    # Seed-OSS's <seed:think>
    ("seed_oss", None, "<seed:think>Budget</seed:think>Rest", ("Budget", "Rest")),
    # an unclosed pre-filled block ends at the family's first call marker
    ("qwen3_coder", True, "<tool_call>\n<function=f>\n</function>\n</tool_call>",
     (None, "<tool_call>\n<function=f>\n</function>\n</tool_call>")),
    ("hermes", True, "Plan<tool_call>{}</tool_call>", ("Plan", "<tool_call>{}</tool_call>")),
    # Command 4's and PLaMo 3's own think tags, the block pre-filled (2026-a:141, 2026h2-b:94)
    ("cohere_command3", True, "I'm\nthinking<|END_THINKING|><|START_ACTION|>[]<|END_ACTION|>",
     ("I'm\nthinking", "<|START_ACTION|>[]<|END_ACTION|>")),
    ("plamo3", True, "<|plamo:begin_think:plamo|>Reasoning.<|plamo:end_think:plamo|>Answer.", ("Reasoning.", "Answer.")),
    # a family whose parser we do not mirror: <think>
    ("granite-20b-fc", None, "<think>x</think>y", ("x", "y")),
])
def test_reasoning_is_split_as_the_family_parser_splits_it(name: str, thinking: bool | None, text: str,
                                                          expected: tuple[str | None, str]) -> None:
    parser = _variant(name, tokenizer=None)(**({} if thinking is None else {"thinking": thinking}))
    reasoning, rest = parser._split_reasoning(text)
    assert (reasoning or None, rest) == expected
