"""History adaptation: argument shape, content value, id reshaping, splitting parallel calls."""

from __future__ import annotations

import copy
import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from wtb_local.formats.rendering.adapt import Adaptation, GrowingAdapter, adapt_messages, mistral_id


def _conversation() -> list[dict]:
    calls = [
        {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": json.dumps({"x": 1})}},
        {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": json.dumps({"y": "é"}, ensure_ascii=False)}},
        {"id": "call_c", "type": "function", "function": {"name": "f", "arguments": json.dumps({"x": 2})}},
    ]
    return [
        {"role": "system", "content": "Current Date: 2024-06-12"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_a", "content": '"r1"'},
        {"role": "tool", "tool_call_id": "call_b", "content": '"r2"'},
        {"role": "tool", "tool_call_id": "call_c", "content": '"r3"'},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_d", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_d", "content": '"r4"'},
        {"role": "user", "content": "thanks"},
    ]


def test_default_gives_dict_arguments_and_empty_content() -> None:
    out = adapt_messages(_conversation(), Adaptation())
    assert out[2]["content"] == ""
    assert [c["function"]["arguments"] for c in out[2]["tool_calls"]] == [{"x": 1}, {"y": "é"}, {"x": 2}]
    assert [c["id"] for c in out[2]["tool_calls"]] == ["call_a", "call_b", "call_c"]


def test_json_arguments_and_none_content() -> None:
    conversation = _conversation()
    conversation[2]["tool_calls"][0]["function"]["arguments"] = {"x": 1}  # a dict becomes JSON text too
    out = adapt_messages(conversation, Adaptation(arguments="json", content="none"))
    assert out[2]["content"] is None
    assert [c["function"]["arguments"] for c in out[2]["tool_calls"]] == ['{"x": 1}', '{"y": "é"}', '{"x": 2}']


def test_unparsable_arguments_are_kept_as_text() -> None:
    conversation = _conversation()
    conversation[2]["tool_calls"][0]["function"]["arguments"] = "{not json"
    out = adapt_messages(conversation, Adaptation())
    assert out[2]["tool_calls"][0]["function"]["arguments"] == "{not json"


def test_input_is_not_mutated() -> None:
    conversation = _conversation()
    before = copy.deepcopy(conversation)
    for adaptation in (Adaptation(), Adaptation(arguments="json", content="none", ids="mistral", split_parallel=True),
                       Adaptation(ids="kimi")):
        adapt_messages(conversation, adaptation)
    assert conversation == before


def test_mistral_ids_are_nine_alphanumerics_and_stay_paired() -> None:
    out = adapt_messages(_conversation(), Adaptation(ids="mistral"))
    call_ids = [c["id"] for m in out if m.get("tool_calls") for c in m["tool_calls"]]
    result_ids = [m["tool_call_id"] for m in out if m["role"] == "tool"]
    assert all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in call_ids)
    assert call_ids == result_ids
    assert len(set(call_ids)) == 4
    assert call_ids[0] == mistral_id("call_a")  # derived from the original id, stable


def test_kimi_ids_name_the_function_with_a_running_index() -> None:
    out = adapt_messages(_conversation(), Adaptation(ids="kimi"))
    call_ids = [c["id"] for m in out if m.get("tool_calls") for c in m["tool_calls"]]
    result_ids = [m["tool_call_id"] for m in out if m["role"] == "tool"]
    assert call_ids == ["functions.f:0", "functions.g:1", "functions.f:2", "functions.g:3"]
    assert result_ids == call_ids


def test_split_parallel_pairs_each_call_with_its_result() -> None:
    conversation = _conversation()
    # Results in another order than the calls: pairing follows tool_call_id.
    conversation[3], conversation[5] = conversation[5], conversation[3]
    out = adapt_messages(conversation, Adaptation(split_parallel=True))
    roles = [m["role"] for m in out]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool",
                     "assistant", "tool", "user"]
    pairs = [(out[i]["tool_calls"][0]["id"], out[i + 1]["tool_call_id"]) for i in (2, 4, 6, 8)]
    assert all(call == result for call, result in pairs)
    assert [out[i + 1]["content"] for i in (2, 4, 6)] == ['"r1"', '"r2"', '"r3"']


def test_split_parallel_pairs_by_position_without_ids_and_keeps_extra_results() -> None:
    conversation = _conversation()
    for message in conversation:
        message.pop("tool_call_id", None)
        for call in message.get("tool_calls") or []:
            call.pop("id")
    conversation.insert(6, {"role": "tool", "content": '"extra"'})
    out = adapt_messages(conversation, Adaptation(split_parallel=True))
    contents = [m["content"] for m in out if m["role"] == "tool"]
    assert contents == ['"r1"', '"r2"', '"r3"', '"extra"', '"r4"']


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["f", "g", "h"]), st.integers(-5, 5)), min_size=1, max_size=4),
       st.booleans(), st.sampled_from(["keep", "mistral", "kimi"]))
def test_adaptation_never_drops_history(calls: list[tuple[str, int]], split: bool, ids: str) -> None:
    conversation = [{"role": "user", "content": "u"},
                     {"role": "assistant", "content": "", "tool_calls": [
                         {"id": f"call_{k}", "type": "function",
                          "function": {"name": name, "arguments": json.dumps({"v": value})}}
                         for k, (name, value) in enumerate(calls)]}]
    conversation += [{"role": "tool", "tool_call_id": f"call_{k}", "content": f"r{k}"} for k in range(len(calls))]
    out = adapt_messages(conversation, Adaptation(ids=ids, split_parallel=split))
    got_calls = [(c["function"]["name"], c["function"]["arguments"]) for m in out for c in m.get("tool_calls") or []]
    assert got_calls == [(name, {"v": value}) for name, value in calls]
    assert [m["content"] for m in out if m["role"] == "tool"] == [f"r{k}" for k in range(len(calls))]
    assert adapt_messages(conversation, Adaptation(ids=ids, split_parallel=split)) == out  # deterministic


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["keep", "mistral", "kimi"]), st.booleans(), st.sampled_from(["dict", "json"]),
       st.permutations(range(9)))
def test_growing_adapter_equals_adapt_messages_at_every_length(ids: str, split: bool, arguments: str,
                                                               order: list[int]) -> None:
    """Each message reshaped once (GrowingAdapter) gives adapt_messages' list at every step of a growing
    conversation, and again for the same message dicts in another order: Kimi's running index moves with
    the calls before a message, so a remembered reshaping is reused only with the same ids."""
    adaptation = Adaptation(ids=ids, split_parallel=split, arguments=arguments)
    conversation = _conversation()
    grow = GrowingAdapter(adaptation)
    for length in range(1, len(conversation) + 1):
        assert grow(conversation[:length]) == adapt_messages(conversation[:length], adaptation)
    shuffled = [conversation[i] for i in order]  # the same dicts, other neighbours
    assert grow(shuffled) == adapt_messages(shuffled, adaptation)
    assert conversation == _conversation()  # never changed
