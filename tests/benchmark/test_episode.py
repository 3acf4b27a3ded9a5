"""The step loop (docs/evaluation.md §3-4, §7) against the reference's result file, and each rule alone."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from wtb_local.benchmark.evaluator.conversation import gold_nodes, gold_path_messages
from wtb_local.benchmark.evaluator.episode import (
    ERROR_BEYOND,
    ERROR_EMPTY,
    ERROR_NO_CANDIDATE,
    Episode,
    session_episodes,
    session_result,
)
from wtb_local.benchmark.evaluator.ids import CALL_ID_STYLES, make_call_id
from wtb_local.benchmark.evaluator.paths import TaskGraph
from wtb_local.benchmark.evaluator.tools import convert_tools, tool_names
from wtb_local.contract.schema import Session
from wtb_local.engines.scripted import ScriptedBackend

SESSIONS = Path(__file__).parents[1] / "fixtures" / "vectors" / "sessions"
EMPTY_ANSWER = {"candidate_0_answer_function_list": {"action": []}}


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


DATASET = [Session.model_validate(row) for row in _read_jsonl(SESSIONS / "dataset.jsonl")]
REFERENCE = {row["id"]: row for row in _read_jsonl(SESSIONS / "result.jsonl")}
BACKEND = ScriptedBackend(SESSIONS / "script.jsonl")


def _without_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(messages)
    for message in out:
        message.pop("tool_call_id", None)
        for call in message.get("tool_calls") or []:
            call.pop("id", None)
    return out


def _distinct(answer: dict[str, Any]) -> list[Any]:
    """Candidates listed once each (the reference repeats a candidate once per path)."""
    out: list[Any] = []
    for value in answer.values():
        if value not in out:
            out.append(value)
    return out


def _replay(session: Session) -> dict[str, Any]:
    episodes = session_episodes(session)
    for episode in episodes:
        while not episode.done:
            episode.accept(BACKEND.reply_for(session.id, episode.task_idx, episode.step))
    return session_result(session, episodes, "scripted")


@pytest.mark.parametrize("session", DATASET, ids=lambda s: s.id)
def test_replay_equals_reference(session: Session) -> None:
    mine = _replay(session)
    reference = REFERENCE[session.id]
    assert mine["id"] == reference["id"]
    assert len(mine["result"]) == len(reference["result"])
    for task, expected in zip(mine["result"], reference["result"], strict=True):
        assert list(task) == list(expected)
        assert task["action_name_label"] == expected["action_name_label"]
        assert task["is_optimal"] == expected["is_optimal"]
        log, expected_log = task["inference_log"], expected["inference_log"]
        assert list(log) == list(expected_log)  # same steps, same order
        assert log["task_idx"] == expected_log["task_idx"]
        assert log["begin_of_current_task"] == expected_log["begin_of_current_task"]
        for key in (k for k in expected_log if k.startswith("step_")):
            step, expected_step = log[key], expected_log[key]
            assert list(step) == ["inference_input", "inference_output", "inference_answer"]
            messages = step["inference_input"]["messages"]
            expected_messages = expected_step["inference_input"]["messages"]
            assert _without_ids(messages) == _without_ids(expected_messages)
            assert json.dumps(_without_ids(messages)) == json.dumps(_without_ids(expected_messages))
            assert step["inference_input"]["tools"] == expected_step["inference_input"]["tools"]
            # Output is stored exactly, key order included (labels and error reasons).
            assert json.dumps(step["inference_output"]) == json.dumps(expected_step["inference_output"])
            expected_answer = expected_step.get("inference_answer", EMPTY_ANSWER)
            assert _distinct(step["inference_answer"]) == _distinct(expected_answer)
            # Ids the model gave are kept as given; history ids are ours (the reference's are random).
            model_ids = [m.get("tool_call_id") for m in expected_messages if m["role"] == "tool"]
            our_ids = [m.get("tool_call_id") for m in messages if m["role"] == "tool"]
            for ours, theirs in zip(our_ids, model_ids, strict=True):
                if not theirs.startswith("toolu_bdrk_"):
                    assert ours == theirs


def test_replay_covers_every_outcome() -> None:
    reasons = set()
    labels = set()
    for session in DATASET:
        for task in _replay(session)["result"]:
            labels.add((task["action_name_label"], task["is_optimal"]))
            for key, step in task["inference_log"].items():
                if key.startswith("step_"):
                    reasons.add(step["inference_output"].get("error_reason", "")[:30])
    assert {("correct", True), ("correct", False), ("error", False)} <= labels
    assert {"", ERROR_EMPTY[:30], ERROR_NO_CANDIDATE[:30], "parse tool_calls failed, error"} <= reasons


@pytest.mark.parametrize("session", DATASET, ids=lambda s: s.id)
def test_gold_replies_are_correct_and_optimal(session: Session) -> None:
    episodes = session_episodes(session)
    for episode in episodes:
        while not episode.done:
            episode.accept(episode.gold_reply())
        result = episode.result()
        assert result["action_name_label"] == "correct"
        assert result["is_optimal"] is True


def test_results_are_fresh_and_requests_stable() -> None:
    episode = session_episodes(DATASET[0])[1]
    first, tools = episode.request()
    first[0]["content"] = "changed"
    again, tools_again = episode.request()
    assert again[0]["content"].startswith("Current Date: ")
    assert tools is tools_again
    episode.accept(episode.gold_reply())
    result = episode.result()
    result["inference_log"]["step_0"]["inference_output"]["tool_calls"].clear()
    assert episode.result()["inference_log"]["step_0"]["inference_output"]["tool_calls"]


# --- the rules one by one, on a small synthetic session ---------------------------------------------------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"tool {name}",
            "parameters": {
                "type": "object",
                "properties": {"x": {"type": "float", "description": "a number"}},
                "required": ["x"],
            },
        },
    }
    for name in ("f", "g")
]


def _node(name: str, deps: list[int], observation: Any = "obs", **extra: Any) -> dict[str, Any]:
    return {
        "action": {"name": name, "arguments": {"x": 1.5, "note": "é"}},
        "observation": observation,
        "dependency_list": deps,
        **extra,
    }


ASK = "ask_user_for_required_parameters"
PREPARE = "prepare_to_answer"


def _session(tasks: list[list[dict[str, Any]]]) -> Session:
    return Session.model_validate(
        {
            "id": "wild_tool_bench_7",
            "english_env_info": "2025-01-01 Monday",
            "english_tools": TOOLS,
            "english_tasks": [f"task {i}" for i in range(len(tasks))],
            "english_answer_list": tasks,
            "english_task_types": ["Parallel Multi-Tool"] * len(tasks),
            "english_turn_subtypes": ["Coreferential Reference"] * (len(tasks) - 1),
        }
    )


def _call(name: str, call_id: str | None = "c", arguments: str = '{"x": 1.5}') -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        call["id"] = call_id
    return call


def _reply(content: Any = None, calls: Any = None, reasoning: Any = None) -> dict[str, Any]:
    return {"content": content, "reasoning_content": reasoning, "tool_calls": calls}


# f and g in parallel, then prepare.
PARALLEL = [_node("f", []), _node("g", [], observation={"k": [1, "ü"]}), _node(PREPARE, [0, 1], "done")]
# ask first, then f, then prepare.
CLARIFY = [_node(ASK, [], "which one?", user_input="the blue one"), _node("f", [0]), _node(PREPARE, [1], "ok")]


def _episode(nodes: list[dict[str, Any]], task: int = 0, id_style: str = "openai") -> Episode:
    tasks = [PARALLEL] * task + [nodes]
    return session_episodes(_session(tasks), id_style=id_style)[task]


def _step(episode: Episode, k: int) -> dict[str, Any]:
    return episode.result()["inference_log"][f"step_{k}"]


@pytest.mark.parametrize("reply", [_reply(None, None), _reply("", None), _reply("", []), _reply(None, [])])
def test_empty_reply_is_an_error(reply: dict[str, Any]) -> None:
    episode = _episode(PARALLEL)
    episode.accept(reply)
    assert episode.done and episode.result()["action_name_label"] == "error"
    step = _step(episode, 0)
    assert step["inference_output"]["error_reason"] == ERROR_EMPTY
    assert step["inference_answer"] == EMPTY_ANSWER


def test_whitespace_only_text_is_a_reply() -> None:
    episode = _episode(PARALLEL)
    episode.accept(_reply(None, [_call("g", "b"), _call("f", "a")]))
    episode.accept(_reply("  \n"))
    result = episode.result()
    assert result["action_name_label"] == "correct" and result["is_optimal"] is True
    assert _step(episode, 1)["inference_answer"] == {
        "candidate_0_answer_function_list": {
            "action": [{"arguments": '{"x": 1.5, "note": "é"}', "name": PREPARE}],
            "observation": "done",
        }
    }


def test_text_where_only_tools_are_due_lists_the_candidates() -> None:
    episode = _episode(PARALLEL)
    episode.accept(_reply("I think so"))
    step = _step(episode, 0)
    assert step["inference_output"]["error_reason"] == ERROR_NO_CANDIDATE
    listed = [[a["name"] for a in c["action"]] for c in step["inference_answer"].values()]
    assert listed == [["f"], ["g"], ["f", "g"]]


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        (_call("f", None), "parse tool_calls failed, error: 'id'"),
        ({"id": "a", "type": "function"}, "parse tool_calls failed, error: 'function'"),
        ({"id": "a", "function": {"arguments": "{}"}}, "parse tool_calls failed, error: 'name'"),
        ({"id": "a", "function": {"name": "f"}}, "parse tool_calls failed, error: 'arguments'"),
    ],
)
def test_unreadable_call_is_an_error(call: dict[str, Any], reason: str) -> None:
    episode = _episode(PARALLEL)
    episode.accept(_reply("", [call], reasoning="hmm"))
    step = _step(episode, 0)
    assert step["inference_output"]["error_reason"] == reason
    assert step["inference_output"]["reasoning_content"] == "hmm"
    assert step["inference_output"]["tool_calls"] == [call]
    assert step["inference_answer"] == EMPTY_ANSWER


def test_accepted_calls_extend_the_conversation() -> None:
    episode = _episode(PARALLEL)
    calls = [_call("g", "id-g"), _call("f", "id-f")]
    episode.accept(_reply("sure", calls, reasoning="think"), latency=0.5, input_tokens=10, output_tokens=3)
    messages, tools = episode.request()
    assert messages[-3] == {"role": "assistant", "reasoning_content": "think", "content": "sure", "tool_calls": calls}
    # Candidate order is name order (f, g); the j-th observation takes the model's j-th id (a quirk).
    assert messages[-2] == {"role": "tool", "content": "obs", "tool_call_id": "id-g"}
    assert messages[-1] == {"role": "tool", "content": '{"k": [1, "ü"]}', "tool_call_id": "id-f"}
    assert tools[0]["function"]["parameters"]["properties"]["x"]["type"] == "number"
    answer = _step(episode, 0)["inference_answer"]["candidate_0_answer_function_list"]
    assert [a["name"] for a in answer["action"]] == ["f", "g"] and list(answer) == ["action"]
    result = episode.result()
    assert (result["latency"], result["input_token_count"], result["output_token_count"]) == ([0.5], [10], [3])


def test_no_reasoning_key_when_reasoning_is_null() -> None:
    episode = _episode(PARALLEL)
    episode.accept(_reply(None, [_call("f", "a"), _call("g", "b")]))
    assert list(episode.request()[0][-3]) == ["role", "content", "tool_calls"]


def test_wrong_names_and_sequential_steps() -> None:
    episode = _episode(PARALLEL)
    episode.accept(_reply(None, [_call("f")]))  # f alone: g must follow (suboptimal)
    assert episode.step == 1 and not episode.done
    episode.accept(_reply(None, [_call("f")]))  # f again: only g is a candidate
    step = _step(episode, 1)
    assert step["inference_output"]["error_reason"] == ERROR_NO_CANDIDATE
    assert [c["action"][0]["name"] for c in step["inference_answer"].values()] == ["g"]
    assert episode.result()["action_name_label"] == "error"


def test_suboptimal_path_is_correct_but_not_optimal() -> None:
    episode = _episode(PARALLEL)
    for reply in (_reply(None, [_call("f")]), _reply(None, [_call("g")]), _reply("answer")):
        episode.accept(reply)
    result = episode.result()
    assert result["action_name_label"] == "correct" and result["is_optimal"] is False


def test_ask_as_text_then_user_input() -> None:
    episode = _episode(CLARIFY)
    episode.accept(_reply("Which one do you mean?", reasoning="r"))
    messages, _ = episode.request()
    assert messages[-2:] == [
        {"role": "assistant", "content": "Which one do you mean?"},
        {"role": "user", "content": "the blue one"},
    ]
    answer = _step(episode, 0)["inference_answer"]["candidate_0_answer_function_list"]
    assert list(answer) == ["action", "observation", "user_input"]
    assert answer["observation"] == "which one?" and answer["user_input"] == "the blue one"
    episode.accept(_reply(None, [_call("f", "x")]))
    episode.accept(_reply("here"))
    assert episode.result()["action_name_label"] == "correct" and episode.result()["is_optimal"] is True


def test_ask_as_tool_call() -> None:
    episode = _episode(CLARIFY)
    episode.accept(_reply(None, [_call(ASK, "q1", '{"question": "?"}')]))
    messages, _ = episode.request()
    assert messages[-2]["tool_calls"][0]["function"]["name"] == ASK
    assert messages[-1] == {"role": "tool", "content": "which one?", "tool_call_id": "q1"}
    assert all(m["role"] != "user" for m in messages[-2:])
    assert list(_step(episode, 0)["inference_answer"]["candidate_0_answer_function_list"]) == ["action"]
    assert episode.taken_steps == {0: (0,)}
    episode.accept(_reply(None, [_call("f", "x")]))
    episode.accept(_reply("here"))
    assert episode.result()["action_name_label"] == "correct"


def test_prepare_as_tool_call_ends_the_task() -> None:
    episode = _episode(PARALLEL)
    episode.accept(_reply(None, [_call("f", "a"), _call("g", "b")]))
    episode.accept(_reply(None, [_call(PREPARE, "p", '{"answer_type": "tool"}')]))
    result = episode.result()
    assert episode.done and result["action_name_label"] == "correct" and result["is_optimal"] is True
    assert _step(episode, 1)["inference_output"]["current_action_name_label"] == "correct"


@pytest.mark.parametrize("reply", [_reply(None, [_call("g")]), _reply("text")])
def test_step_beyond_the_nodes(reply: dict[str, Any]) -> None:
    episode = _episode([_node("f", [])])  # no final prepare_to_answer
    episode.accept(_reply(None, [_call("f")]))
    assert episode.step == 1
    episode.accept(reply)
    step = _step(episode, 1)
    assert step["inference_output"]["error_reason"] == ERROR_BEYOND.format(1) == "current step: 1, idx_list is None"
    assert step["inference_answer"] == EMPTY_ANSWER
    assert episode.result()["action_name_label"] == "error"


def test_step_past_every_path_but_within_the_nodes() -> None:
    episode = _episode([_node("f", []), _node("g", [])])  # paths end after one step
    episode.accept(_reply(None, [_call("f"), _call("g")]))
    episode.accept(_reply(None, [_call("f")]))
    step = _step(episode, 1)
    assert step["inference_output"]["error_reason"] == ERROR_NO_CANDIDATE
    assert step["inference_answer"] == EMPTY_ANSWER


def test_error_reason_path_keeps_the_reply_and_extras() -> None:
    episode = _episode(PARALLEL)
    episode.accept(
        _reply("partial", [_call("f")]),
        error_reason="prompt too long: 9000 > 8192 tokens",
        extra={"raw": "<tool_call>", "finish_reason": "length", "content": "ignored"},
    )
    output = _step(episode, 0)["inference_output"]
    assert list(output) == [
        "reasoning_content",
        "content",
        "tool_calls",
        "current_action_name_label",
        "error_reason",
        "raw",
        "finish_reason",
    ]
    assert output["content"] == "partial" and output["tool_calls"] == [_call("f")]
    assert output["error_reason"] == "prompt too long: 9000 > 8192 tokens"
    assert _step(episode, 0)["inference_answer"] == EMPTY_ANSWER
    assert episode.done and episode.result()["action_name_label"] == "error"
    with pytest.raises(RuntimeError):
        episode.accept(_reply("again"))


def test_history_is_the_first_optimal_gold_path() -> None:
    episode = _episode(CLARIFY, task=1)
    messages, _ = episode.request()
    assert messages[0] == {"role": "system", "content": "Current Date: 2025-01-01 Monday"}
    assert messages[1] == {"role": "user", "content": "task 0"}
    call_ids = [make_call_id(f"wild_tool_bench_7/0/0/{k}") for k in range(2)]
    assert messages[2] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": '{"x": 1.5, "note": "é"}'}, "id": call_ids[0]},
            {"type": "function", "function": {"name": "g", "arguments": '{"x": 1.5, "note": "é"}'}, "id": call_ids[1]},
        ],
    }
    # History observations are JSON text once more: a string arrives in quotes.
    assert messages[3] == {"role": "tool", "content": '"obs"', "tool_call_id": call_ids[0]}
    assert messages[4] == {"role": "tool", "content": '{"k": [1, "ü"]}', "tool_call_id": call_ids[1]}
    assert messages[5] == {"role": "assistant", "content": "done"}
    assert messages[6] == {"role": "user", "content": "task 1"}
    assert len(messages) == 7


def test_history_of_ask_and_non_object_arguments() -> None:
    nodes = gold_nodes([_node(ASK, [], "q?", user_input="a!"), _node("f", [0]), _node(PREPARE, [1], "fin")])
    nodes[1] = nodes[1].__class__("f", "raw text", {"o": 1}, None, (0,))
    messages = gold_path_messages(nodes, ((0,), (1,), (2,)), session_id="s", task_idx=3, id_style="mistral")
    assert messages[0] == {"role": "assistant", "content": "q?"}
    assert messages[1] == {"role": "user", "content": "a!"}
    assert messages[2]["tool_calls"][0]["function"]["arguments"] == "raw text"  # only objects are dumped
    assert messages[2]["tool_calls"][0]["id"] == make_call_id("s/3/1/0", "mistral")
    assert messages[3]["content"] == '{"o": 1}'
    assert messages[4] == {"role": "assistant", "content": "fin"}


def test_id_styles_shape_history_ids() -> None:
    for style in CALL_ID_STYLES:
        messages, _ = _episode(PARALLEL, task=1, id_style=style).request()
        ids = [c["id"] for c in messages[2]["tool_calls"]]
        assert ids == [make_call_id(f"wild_tool_bench_7/0/0/{k}", style) for k in range(2)]
        assert [m["tool_call_id"] for m in messages[3:5]] == ids


def test_make_call_id_styles() -> None:
    openai = make_call_id("a/1/2/0")
    assert openai.startswith("call_") and len(openai) == 29 and int(openai[5:], 16) >= 0
    assert openai == make_call_id("a/1/2/0", "openai") != make_call_id("a/1/2/1")
    mistral = make_call_id("a/1/2/0", "mistral")
    assert len(mistral) == 9 and mistral.isalnum() and mistral.isascii()
    assert mistral != make_call_id("a/1/2/1", "mistral")
    assert make_call_id("functions.f:12", "index") == "12"
    with pytest.raises(ValueError):
        make_call_id("no-number", "index")
    with pytest.raises(ValueError):
        make_call_id("a", "uuid")


def test_gold_reply_follows_what_was_accepted() -> None:
    from wtb_local.benchmark.evaluator.gold_replies import gold_reply

    episode = _episode(PARALLEL)
    first = gold_reply(episode)
    assert [c["function"]["name"] for c in first["tool_calls"]] == ["f", "g"]
    assert first["tool_calls"][0]["id"] == make_call_id("wild_tool_bench_7/0/0/0")
    assert first["tool_calls"][0]["function"]["arguments"] == '{"x": 1.5, "note": "é"}'
    episode.accept(_reply(None, [_call("f")]))  # off the optimal path
    assert [c["function"]["name"] for c in gold_reply(episode)["tool_calls"]] == ["g"]
    assert episode.gold_reply() == gold_reply(episode)  # the Episode API still answers
    episode.accept(gold_reply(episode))
    assert gold_reply(episode) == {"content": "done", "reasoning_content": None, "tool_calls": None}
    clarify = _episode(CLARIFY)
    assert gold_reply(clarify)["content"] == "which one?"


def test_the_evaluator_judges_only_the_oracle_plans_next_to_its_backend() -> None:
    import subprocess
    import sys

    import wtb_local.benchmark.evaluator.episode as episode_module

    assert not hasattr(episode_module, "_Planner")
    code = ("import sys, wtb_local.benchmark.evaluator.episode as e; "
            "print(sorted(m for m in sys.modules if m.startswith('wtb_local.engines')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"  # the judge imports nothing of the backends


def test_episode_from_plain_parts() -> None:
    graph = TaskGraph.from_nodes(PARALLEL)
    episode = Episode("s", 0, PARALLEL, [{"role": "user", "content": "go"}], convert_tools(TOOLS), graph=graph)
    assert episode.result()["inference_log"] == {"task_idx": 0, "begin_of_current_task": {"role": "user", "content": "go"}}
    episode.accept(episode.gold_reply())
    episode.accept(episode.gold_reply())
    assert episode.result()["action_name_label"] == "correct"


def test_tool_conversion() -> None:
    converted = convert_tools(TOOLS)
    assert '"type": "float"' not in json.dumps(converted)
    assert '"type": "float"' in json.dumps(TOOLS)  # the input is left alone
    assert tool_names(converted) == ["f", "g"]
    assert tool_names([{"type": "function"}, {"function": {"name": "h"}}]) == ["h"]
