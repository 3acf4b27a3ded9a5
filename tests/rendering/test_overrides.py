"""The overrides change only what their header says: where the shipped template works (one call per
message, or no calls, or no tools), they render byte for byte what the shipped template renders."""

from __future__ import annotations

import json

import pytest

from tests.rendering.conftest import OVERRIDES_DIR, make_tokenizer, real_templates
from wtb_local.benchmark.dataset import load_dataset
from wtb_local.benchmark.evaluator.tools import convert_tools
from wtb_local.formats.rendering.adapt import Adaptation, adapt_messages


def _tools() -> list[dict]:
    tools = []
    for session in load_dataset("sample", quiet=True):
        tools += convert_tools(session.english_tools)
    return tools


def _conversation(with_call: bool) -> list[dict]:
    messages = [{"role": "system", "content": "Current Date: 2024-06-12 10:23:45 Wednesday"},
                {"role": "user", "content": "Weather in Paris?"}]
    if with_call:
        call = {"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": "Par\u00eds \"x\"", "n": 2},
                                                                            ensure_ascii=False)}}
        messages += [{"role": "assistant", "content": "", "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": "call_1", "content": json.dumps("sunny")}]
    messages += [{"role": "assistant", "content": "It is sunny."}, {"role": "user", "content": "Thanks!"}]
    return messages


# (shipped template, override, conversation has a call, tools given, adaptation the shipped one needs)
SAME_AS_SHIPPED = [
    ("meta-llama/Llama-3.1-8B-Instruct", "llama3_json", True, True, Adaptation()),
    ("meta-llama/Llama-3.3-70B-Instruct", "llama3_json", True, True, Adaptation()),
    ("openai/gpt-oss-120b", "gpt_oss", True, True, Adaptation()),
    ("ibm-granite/granite-3.3-2b-instruct", "granite3_3", False, True, Adaptation()),
    ("MadeAgents/Hammer2.1-7b", "hammer2_1", False, True, Adaptation()),
    ("deepseek-ai/DeepSeek-V3.1", "deepseek_v31", True, False, Adaptation(arguments="json")),
]


@pytest.mark.parametrize(("key", "override", "with_call", "with_tools", "adaptation"), SAME_AS_SHIPPED,
                         ids=[f"{row[1]}-{row[0]}" for row in SAME_AS_SHIPPED])
def test_override_matches_the_shipped_template_where_that_works(key: str, override: str, with_call: bool,
                                                                with_tools: bool, adaptation: Adaptation) -> None:
    shipped = real_templates()[key]["chat_template"]
    mine = (OVERRIDES_DIR / f"{override}.jinja").read_text(encoding="utf-8")
    tokenizer = make_tokenizer(shipped)
    messages = adapt_messages(_conversation(with_call), adaptation)
    tools = _tools() if with_tools else None
    for generation_prompt in (True, False):
        a = tokenizer.apply_chat_template(messages, tools=tools, chat_template=shipped, tokenize=False,
                                          add_generation_prompt=generation_prompt)
        b = tokenizer.apply_chat_template(messages, tools=tools, chat_template=mine, tokenize=False,
                                          add_generation_prompt=generation_prompt)
        if override == "hammer2_1" and not generation_prompt:
            # The one intended difference: the shipped Hammer template always adds the generation prompt.
            a = a.removesuffix("<|im_start|>assistant\n")
        assert b == a


def test_overrides_name_every_result_after_its_own_call() -> None:
    # gpt-oss: results are addressed by function name; with several calls each result keeps its call's name.
    mine = (OVERRIDES_DIR / "gpt_oss.jinja").read_text(encoding="utf-8")
    calls = [{"id": f"c{k}", "type": "function", "function": {"name": name, "arguments": {"k": k}}}
             for k, name in enumerate(["alpha", "beta", "alpha"])]
    messages = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "", "tool_calls": calls},
                {"role": "tool", "tool_call_id": "c1", "content": "B"},
                {"role": "tool", "tool_call_id": "c0", "content": "A0"},
                {"role": "tool", "tool_call_id": "c2", "content": "A2"}]
    text = make_tokenizer(mine).apply_chat_template(messages, chat_template=mine, tokenize=False,
                                                    add_generation_prompt=True)
    assert '<|start|>functions.beta to=assistant<|channel|>commentary<|message|>"B"<|end|>' in text
    assert '<|start|>functions.alpha to=assistant<|channel|>commentary<|message|>"A0"<|end|>' in text
    assert text.count("<|start|>assistant to=functions.") == 3


def test_gpt_oss_override_date_can_be_pinned() -> None:
    template = (OVERRIDES_DIR / "gpt_oss.jinja").read_text()
    tokenizer = make_tokenizer(template)
    messages = _conversation(with_call=False)
    pinned = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                           date_string="2025-01-08")
    assert "Current date: 2025-01-08\n" in pinned
    today = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert "Current date: 2025-01-08\n" not in today and "Current date: 20" in today
