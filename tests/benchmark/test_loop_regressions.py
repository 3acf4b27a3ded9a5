"""Regression cases from a differential test of the path engine and step loop against the reference.

Every expected value below was produced by running a faithful port of the reference's
`ToolCallGraph` and step loop on the same gold nodes and replies; they are written out as literals.
"""

from __future__ import annotations

from typing import Any

from wtb_local.benchmark.evaluator.episode import ERROR_NO_CANDIDATE, ERROR_PARSE, Episode
from wtb_local.benchmark.evaluator.paths import TaskGraph

ASK = "ask_user_for_required_parameters"
PREP = "prepare_to_answer"
TASK = [{"role": "user", "content": "t"}]


def _node(name: str, deps: list[int], obs: Any = "o", user_input: str | None = None, args: Any = None) -> dict:
    node: dict[str, Any] = {
        "action": {"name": name, "arguments": {} if args is None else args},
        "observation": obs,
        "dependency_list": deps,
    }
    if user_input is not None:
        node["user_input"] = user_input
    return node


def _call(name: Any, call_id: str = "c0") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _text(content: str) -> dict[str, Any]:
    return {"content": content, "tool_calls": None}


def _calls(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"content": None, "tool_calls": list(calls)}


def _run(nodes: list[dict], replies: list[dict[str, Any]]) -> tuple[Episode, dict[str, Any]]:
    episode = Episode("s", 0, nodes, TASK, [])
    for reply in replies:
        assert not episode.done
        episode.accept(reply)
    assert episode.done
    return episode, episode.result()


def _steps(result: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    log = result["inference_log"]
    return [
        (key, log[key]["inference_output"]["current_action_name_label"], log[key]["inference_output"].get("error_reason"))
        for key in log
        if key.startswith("step_")
    ]


def test_first_optimal_path_is_not_the_asap_schedule() -> None:
    # b(dep 3), b, b, a: the search takes (a) first, then the whole b run, before the ASAP step (1, 2, 3).
    graph = TaskGraph(["b", "b", "b", "a"], [[3], [], [], []])
    assert graph.min_length == 2
    assert graph.first_optimal_path == ((3,), (0, 1, 2))
    assert graph.candidates(0) == [(1,), (3,), (1, 2), (3, 1, 2)]
    assert graph.candidates(1) == [(2,), (0,), (0, 1, 2), (3,)]
    assert graph.candidates(2) == [(3,), (1,), (0,)]
    assert graph.candidates(3) == [(0,), (2,)]


def test_same_name_run_expansion_and_call_id_quirk() -> None:
    nodes = [
        _node("get_x", [], obs="o0", args={"k": 0}),
        _node("get_x", [], obs={"v": 1}, args={"k": 1}),
        _node("alpha", [], obs="o2"),
        _node(PREP, [0, 1, 2], obs="done"),
    ]
    graph = TaskGraph.from_nodes(nodes)
    assert graph.first_optimal_path == ((0, 1, 2), (3,))
    assert graph.candidates(0) == [(0,), (2,), (0, 1), (2, 0, 1)]
    assert graph.candidates(1) == [(1,), (0,), (0, 1), (2,), (3,)]

    calls = _calls(_call("get_x", "id_a"), _call("alpha", "id_b"), _call("get_x", "id_c"))
    episode, result = _run(nodes, [calls, _text("fin")])
    assert (result["action_name_label"], result["is_optimal"]) == ("correct", True)
    assert result["inference_log"]["step_0"]["inference_answer"] == {
        "candidate_0_answer_function_list": {
            "action": [
                {"arguments": "{}", "name": "alpha"},
                {"arguments": '{"k": 0}', "name": "get_x"},
                {"arguments": '{"k": 1}', "name": "get_x"},
            ]
        }
    }
    # Observations follow the candidate's name order; ids follow the model's call order.
    assert episode.request()[0][1:] == [
        {"role": "assistant", "content": None, "tool_calls": calls["tool_calls"]},
        {"role": "tool", "content": "o2", "tool_call_id": "id_a"},
        {"role": "tool", "content": "o0", "tool_call_id": "id_b"},
        {"role": "tool", "content": '{"v": 1}', "tool_call_id": "id_c"},
        {"role": "assistant", "content": "fin"},
    ]


def test_choosing_one_call_of_a_run_commits_to_the_whole_run() -> None:
    nodes = [
        _node("get_x", [], obs="o0", args={"k": 0}),
        _node("get_x", [], obs={"v": 1}, args={"k": 1}),
        _node("alpha", [], obs="o2"),
        _node(PREP, [0, 1, 2], obs="done"),
    ]
    _, result = _run(nodes, [_calls(_call("get_x", "id_a")), _calls(_call("get_x", "id_b"), _call("alpha", "id_c"))])
    assert (result["action_name_label"], result["is_optimal"]) == ("error", False)
    assert _steps(result) == [("step_0", "correct", None), ("step_1", "error", ERROR_NO_CANDIDATE)]
    assert result["inference_log"]["step_1"]["inference_answer"] == {
        "candidate_0_answer_function_list": {"action": [{"arguments": '{"k": 1}', "name": "get_x"}]}
    }


def test_text_ask_does_not_narrow_so_the_same_ask_can_be_taken_twice() -> None:
    # The ask can share a step with a call (a DAG the loader warns about); the reference accepts it.
    nodes = [
        _node(ASK, [], obs="Which?", user_input="The first."),
        _node("alpha", [], obs={"r": 1}),
        _node(PREP, [0, 1], obs="done"),
    ]
    episode, result = _run(nodes, [_text("q?"), _text("q again?"), _text("answer")])
    assert (result["action_name_label"], result["is_optimal"]) == ("correct", False)
    assert _steps(result) == [("step_0", "correct", None), ("step_1", "correct", None), ("step_2", "correct", None)]
    ask_answer = {
        "candidate_0_answer_function_list": {
            "action": [{"arguments": "{}", "name": ASK}],
            "observation": "Which?",
            "user_input": "The first.",
        }
    }
    assert result["inference_log"]["step_0"]["inference_answer"] == ask_answer
    assert result["inference_log"]["step_1"]["inference_answer"] == ask_answer
    assert episode.request()[0][1:] == [
        {"role": "assistant", "content": "q?"},
        {"role": "user", "content": "The first."},
        {"role": "assistant", "content": "q again?"},
        {"role": "user", "content": "The first."},
        {"role": "assistant", "content": "answer"},
    ]


def test_text_where_no_pseudo_action_is_due_lists_only_the_narrowed_candidates() -> None:
    nodes = [
        _node("beta", [], obs="ob"),
        _node("alpha", [], obs="oa"),
        _node(ASK, [0, 1], obs="Which?", user_input="That one."),
        _node("alpha", [2], obs="oa2"),
        _node(PREP, [3], obs="done"),
    ]
    graph = TaskGraph.from_nodes(nodes)
    assert graph.min_length == 4
    assert graph.first_optimal_path == ((0, 1), (2,), (3,), (4,))
    assert graph.candidates(0) == [(0,), (1,), (1, 0)]
    assert graph.candidates(1, {0: (0,)}) == [(1,)]
    _, result = _run(nodes, [_calls(_call("beta")), _text("which?")])
    assert _steps(result) == [("step_0", "correct", None), ("step_1", "error", ERROR_NO_CANDIDATE)]
    assert result["inference_log"]["step_1"]["inference_answer"] == {
        "candidate_0_answer_function_list": {"action": [{"arguments": "{}", "name": "alpha"}]}
    }


def test_a_call_without_a_text_name_is_compared_and_matches_nothing() -> None:
    # The reference only sorts the names: one null name sorts fine and then matches no candidate.
    nodes = [_node("alpha", [], args={"k": 1}), _node("beta", [], args={"k": 2}), _node(PREP, [0, 1], obs="done")]
    _, result = _run(nodes, [_calls({"id": "x", "type": "function", "function": {"name": None, "arguments": "{}"}})])
    assert (result["action_name_label"], result["is_optimal"]) == ("error", False)
    assert _steps(result) == [("step_0", "error", ERROR_NO_CANDIDATE)]
    assert result["inference_log"]["step_0"]["inference_answer"] == {
        "candidate_0_answer_function_list": {"action": [{"arguments": '{"k": 1}', "name": "alpha"}]},
        "candidate_1_answer_function_list": {"action": [{"arguments": '{"k": 2}', "name": "beta"}]},
        "candidate_2_answer_function_list": {
            "action": [{"arguments": '{"k": 1}', "name": "alpha"}, {"arguments": '{"k": 2}', "name": "beta"}]
        },
    }


def test_names_that_cannot_be_ordered_are_a_parse_error() -> None:
    # [defined here] the reference's sort raises TypeError on two null names.
    nodes = [_node("alpha", []), _node(PREP, [0], obs="done")]
    reply = _calls(
        {"id": "x", "function": {"name": None, "arguments": "{}"}},
        {"id": "y", "function": {"name": None, "arguments": "{}"}},
    )
    _, result = _run(nodes, [reply])
    assert _steps(result) == [("step_0", "error", ERROR_PARSE.format("tool names cannot be ordered"))]
