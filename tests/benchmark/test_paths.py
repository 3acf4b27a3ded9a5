"""The lazy path engine against the reference's full enumeration (vectors) and a literal brute force."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.reference_paths import enumerate_paths as brute_force_paths
from wtb_local.benchmark.evaluator.paths import TaskGraph

FIXTURES = Path(__file__).parents[1] / "fixtures" / "vectors"
GRAPH_FILES = [FIXTURES / "sessions" / "graph.jsonl", FIXTURES / "special_graphs.jsonl"]

Step = tuple[int, ...]
Path_ = tuple[Step, ...]


def expected_candidates(
    paths: list[Path_], names: list[str] | tuple[str, ...], step: int, accepted: dict[int, Step]
) -> list[Step]:
    """Candidates derived from a full path list the way the reference does (docs/evaluation.md §2)."""
    out: list[Step] = []
    for path in paths:
        if len(path) <= step:
            continue
        if any(len(path) <= k or set(path[k]) != set(v) for k, v in accepted.items()):
            continue
        candidate = tuple(sorted(path[step], key=lambda i: names[i]))
        if candidate not in out:
            out.append(candidate)
    return out


def load_graphs() -> list[dict]:
    rows = []
    for file in GRAPH_FILES:
        with file.open(encoding="utf-8") as handle:
            rows.extend(json.loads(line) for line in handle)
    return rows


GRAPHS = load_graphs()


def _graph_id(row: dict) -> str:
    return f"{row['id']}/{row['task_idx']}"


def _as_paths(raw: list) -> list[Path_]:
    return [tuple(tuple(step) for step in path) for path in raw]


def test_vectors_are_loaded() -> None:
    assert len(GRAPHS) == 256 + 300


@pytest.mark.parametrize("row", GRAPHS, ids=_graph_id)
def test_min_length_and_first_optimal_path(row: dict) -> None:
    graph = TaskGraph.from_nodes(row["answer_list"])
    assert graph.min_length == row["min_length"]
    assert graph.first_optimal_path == _as_paths(row["optimal_path_list"])[0]
    assert graph.can_be_optimal()


@pytest.mark.parametrize("row", GRAPHS, ids=_graph_id)
def test_brute_force_matches_reference_enumeration(row: dict) -> None:
    """The test's own literal enumerator reproduces the reference's paths, so it can judge the engine."""
    graph = TaskGraph.from_nodes(row["answer_list"])
    deps = [node["dependency_list"] for node in row["answer_list"]]
    assert brute_force_paths(list(graph.names), deps) == _as_paths(row["all_path_list"])


@pytest.mark.parametrize("row", GRAPHS, ids=_graph_id)
def test_candidates_along_paths(row: dict) -> None:
    graph = TaskGraph.from_nodes(row["answer_list"])
    paths = _as_paths(row["all_path_list"])
    names = graph.names
    # Every prefix of a spread of paths (first, last, every 7th), with every step accepted.
    chosen = sorted({0, len(paths) - 1, *range(0, len(paths), 7)})
    for index in chosen:
        path = paths[index]
        for step in range(len(path) + 1):
            accepted = {k: path[k] for k in range(step)}
            assert graph.candidates(step, accepted) == expected_candidates(paths, names, step, accepted)
    # No constraint at all, at every position (what an early ask step leaves open).
    for step in range(len(row["answer_list"]) + 1):
        assert graph.candidates(step) == expected_candidates(paths, names, step, {})


@pytest.mark.parametrize("row", [r for r in GRAPHS if len(r["all_path_list"]) > 1][:80], ids=_graph_id)
def test_candidates_with_an_unconstrained_position(row: dict) -> None:
    """An ask step leaves its position open: constraints before and after a gap."""
    graph = TaskGraph.from_nodes(row["answer_list"])
    paths = _as_paths(row["all_path_list"])
    for path in paths[:: max(1, len(paths) // 5)]:
        for gap in range(len(path)):
            for step in range(gap + 1, len(path) + 1):
                accepted = {k: path[k] for k in range(step) if k != gap}
                got = graph.candidates(step, accepted)
                assert got == expected_candidates(paths, graph.names, step, accepted)


def test_ask_position_left_open_in_a_clarify_graph() -> None:
    # ask (0) is independent of the two calls; the position of the ask varies between paths.
    names = ["ask_user_for_required_parameters", "f", "g", "prepare_to_answer"]
    deps = [[], [], [1], [0, 1, 2]]
    graph = TaskGraph(names, deps)
    paths = brute_force_paths(names, deps)
    # Step 0 taken as ask (not narrowing), step 1 a tool step on f.
    accepted = {1: (1,)}
    assert graph.candidates(2, accepted) == expected_candidates(paths, names, 2, accepted)
    assert graph.candidates(2, accepted)  # some path continues


def test_shortest_path_under_constraints() -> None:
    names = ["a", "b", "c", "prepare_to_answer"]
    deps = [[], [], [0], [0, 1, 2]]
    graph = TaskGraph(names, deps)
    paths = brute_force_paths(names, deps)
    accepted = {0: (1,)}  # b first: the chain a -> c now ends one step later
    agreeing = [p for p in paths if set(p[0]) == {1}]
    shortest = min(len(p) for p in agreeing)
    assert graph.best_length(accepted) == shortest == graph.min_length + 1
    assert graph.shortest_path(accepted) == next(p for p in agreeing if len(p) == shortest)
    assert not graph.can_be_optimal(accepted)
    assert graph.shortest_path({0: (3,)}) is None


def test_invalid_graphs_are_refused() -> None:
    with pytest.raises(ValueError, match="cycle"):
        TaskGraph(["a", "b"], [[1], [0]])
    with pytest.raises(ValueError, match="dependency 5"):
        TaskGraph(["a"], [[5]])
    with pytest.raises(ValueError, match="names"):
        TaskGraph(["a"], [])


def test_from_nodes_accepts_schema_nodes() -> None:
    from wtb_local.contract.schema import Node

    rows = GRAPHS[0]["answer_list"]
    graph = TaskGraph.from_nodes([Node.model_validate(r) for r in rows])
    assert graph.first_optimal_path == TaskGraph.from_nodes(rows).first_optimal_path


@st.composite
def small_dags(draw: st.DrawFn) -> tuple[list[str], list[list[int]]]:
    """1-6 calls over 1-3 names, random acyclic deps (any position order), then a final prepare node."""
    calls = draw(st.integers(1, 6))
    alphabet = ["f", "g", "h"][: draw(st.integers(1, 3))]
    names = [draw(st.sampled_from(alphabet)) for _ in range(calls)]
    order = draw(st.permutations(range(calls)))  # a topological order, independent of positions
    deps: list[list[int]] = [[] for _ in range(calls)]
    for rank, node in enumerate(order):
        earlier = list(order[:rank])
        deps[node] = sorted(draw(st.lists(st.sampled_from(earlier), unique=True)) if earlier else [])
    has_dependent = {d for node_deps in deps for d in node_deps}
    prepare_deps = [i for i in range(calls) if i not in has_dependent]
    return [*names, "prepare_to_answer"], [*deps, prepare_deps]


@settings(max_examples=150, deadline=None)
@given(small_dags(), st.data())
def test_lazy_engine_equals_brute_force(dag: tuple[list[str], list[list[int]]], data: st.DataObject) -> None:
    names, deps = dag
    graph = TaskGraph(names, deps)
    paths = brute_force_paths(names, deps)
    shortest = min(len(p) for p in paths)
    assert graph.min_length == shortest
    assert graph.first_optimal_path == next(p for p in paths if len(p) == shortest)
    path = data.draw(st.sampled_from(paths))
    for step in range(len(path) + 1):
        accepted = {k: path[k] for k in range(step)}
        assert graph.candidates(step, accepted) == expected_candidates(paths, names, step, accepted)
        open_position = data.draw(st.integers(0, max(0, step - 1)))
        accepted.pop(open_position, None)
        assert graph.candidates(step, accepted) == expected_candidates(paths, names, step, accepted)
