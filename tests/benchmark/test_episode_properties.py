"""Properties of the step loop on random DAGs, against the brute-force enumeration of test_paths."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.reference_paths import enumerate_paths as brute_force_paths
from wtb_local.benchmark.evaluator.episode import Episode
from wtb_local.benchmark.evaluator.paths import TaskGraph
from wtb_local.contract.schema import ASK_ACTION, PREPARE_ACTION, PSEUDO_ACTIONS

TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
    for n in ("f", "g", "h")
]


@st.composite
def tasks(draw: st.DrawFn) -> list[dict[str, Any]]:
    """1-6 nodes over 1-3 tool names (sometimes one of them an ask), random acyclic deps, then prepare."""
    count = draw(st.integers(1, 6))
    alphabet = ["f", "g", "h"][: draw(st.integers(1, 3))]
    names = [draw(st.sampled_from(alphabet)) for _ in range(count)]
    if draw(st.booleans()):
        names[draw(st.integers(0, count - 1))] = ASK_ACTION
    order = draw(st.permutations(range(count)))
    deps: list[list[int]] = [[] for _ in range(count)]
    for rank, node in enumerate(order):
        earlier = list(order[:rank])
        deps[node] = sorted(draw(st.lists(st.sampled_from(earlier), unique=True)) if earlier else [])
    has_dependent = {d for node_deps in deps for d in node_deps}
    nodes = [
        {
            "action": {"name": name, "arguments": {"i": i}},
            "observation": {"result": i} if name not in PSEUDO_ACTIONS else f"question {i}",
            "dependency_list": deps[i],
            **({"user_input": f"answer {i}"} if name == ASK_ACTION else {}),
        }
        for i, name in enumerate(names)
    ]
    nodes.append(
        {
            "action": {"name": PREPARE_ACTION, "arguments": {"answer_type": "tool"}},
            "observation": "final answer",
            "dependency_list": [i for i in range(count) if i not in has_dependent],
        }
    )
    return nodes


def _reply_for(nodes: list[dict[str, Any]], step: tuple[int, ...], k: int) -> dict[str, Any]:
    names = [nodes[i]["action"]["name"] for i in step]
    if len(step) == 1 and names[0] in PSEUDO_ACTIONS:
        return {"content": f"text for step {k}", "tool_calls": None}
    calls = [
        {
            "id": f"call-{k}-{j}",
            "type": "function",
            "function": {"name": names[j], "arguments": json.dumps(nodes[i]["action"]["arguments"])},
        }
        for j, i in enumerate(step)
    ]
    return {"content": None, "tool_calls": calls}


def _replay(nodes: list[dict[str, Any]], path: tuple[tuple[int, ...], ...]) -> tuple[Episode, bool]:
    """Replay a gold path; returns the episode and whether the loop kept to exactly that path.

    The loop compares names only, so where two candidates of a step share their sorted names it takes the
    first: the replay may then continue on an equivalent path (a reference quirk, checked below).
    """
    episode = Episode("s", 0, nodes, [{"role": "user", "content": "go"}], TOOLS)
    graph = episode.graph
    for k, step in enumerate(path):
        assert not episode.done, f"ended before step {k}"
        before = dict(episode.taken_steps)
        candidates = graph.candidates(k, {j: s for j, s in before.items() if j not in _ask_steps(nodes, before)})
        reply = _reply_for(nodes, step, k)
        episode.accept(reply)
        result = episode.result()
        assert result["inference_log"][f"step_{k}"]["inference_output"]["current_action_name_label"] == "correct"
        taken = episode.taken_steps.get(k)
        if taken is None:  # text answered a prepare_to_answer step: the task is over
            assert episode.done and k == len(path) - 1
            continue
        if set(taken) != set(step):
            # Only names are compared: the first candidate with the same names won.
            names = sorted(nodes[i]["action"]["name"] for i in step)
            if reply["tool_calls"] is not None:
                first = next(c for c in candidates if sorted(nodes[i]["action"]["name"] for i in c) == names)
                assert first == taken
            else:
                pseudo = [c for c in candidates if any(nodes[i]["action"]["name"] in PSEUDO_ACTIONS for i in c)]
                assert pseudo[0] == taken
            return episode, False
    return episode, True


def _ask_steps(nodes: list[dict[str, Any]], taken: dict[int, tuple[int, ...]]) -> set[int]:
    """Steps taken as text asks (they do not narrow the paths)."""
    return {k for k, s in taken.items() if len(s) == 1 and nodes[s[0]]["action"]["name"] == ASK_ACTION}


@settings(max_examples=200, deadline=None)
@given(tasks(), st.data())
def test_replaying_any_gold_path_is_correct(nodes: list[dict[str, Any]], data: st.DataObject) -> None:
    names = [n["action"]["name"] for n in nodes]
    deps = [n["dependency_list"] for n in nodes]
    paths = brute_force_paths(names, deps)
    path = data.draw(st.sampled_from(paths))
    episode, exact = _replay(nodes, path)
    if not exact:
        return
    result = episode.result()
    assert episode.done
    assert result["action_name_label"] == "correct"
    assert len([k for k in result["inference_log"] if k.startswith("step_")]) == len(path)
    assert result["is_optimal"] == (len(path) == TaskGraph(names, deps).min_length)


@settings(max_examples=200, deadline=None)
@given(tasks())
def test_first_optimal_path_is_optimal(nodes: list[dict[str, Any]]) -> None:
    graph = TaskGraph.from_nodes(nodes)
    episode, exact = _replay(nodes, graph.first_optimal_path)
    if exact:
        assert episode.result()["action_name_label"] == "correct"
        assert episode.result()["is_optimal"] is True


@settings(max_examples=200, deadline=None)
@given(tasks(), st.data())
def test_longer_paths_are_not_optimal(nodes: list[dict[str, Any]], data: st.DataObject) -> None:
    names = [n["action"]["name"] for n in nodes]
    deps = [n["dependency_list"] for n in nodes]
    paths = brute_force_paths(names, deps)
    shortest = min(len(p) for p in paths)
    longer = [p for p in paths if len(p) > shortest]
    if not longer:
        return
    episode, exact = _replay(nodes, data.draw(st.sampled_from(longer)))
    if exact:
        assert episode.result()["action_name_label"] == "correct"
        assert episode.result()["is_optimal"] is False


@settings(max_examples=200, deadline=None)
@given(tasks())
def test_oracle_replies_are_correct_and_optimal(nodes: list[dict[str, Any]]) -> None:
    episode = Episode("s", 0, nodes, [{"role": "user", "content": "go"}], TOOLS)
    for _ in range(len(nodes) + 1):
        if episode.done:
            break
        episode.accept(episode.gold_reply())
    result = episode.result()
    assert result["action_name_label"] == "correct"
    assert result["is_optimal"] is True
