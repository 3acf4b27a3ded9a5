"""The embedded sample dataset: loads cleanly and covers what CI and new users need (data/README.md)."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from wtb_local.benchmark.dataset import read_dataset
from wtb_local.benchmark.dataset.dag import ancestors, levels
from wtb_local.benchmark.evaluator.checker import check_arguments
from wtb_local.benchmark.evaluator.tools import convert_tools
from wtb_local.contract.resources import data_dir, sample_dataset_path
from wtb_local.contract.schema import (
    ASK_ACTION,
    PREPARE_ACTION,
    PSEUDO_ACTIONS,
    Node,
    Session,
    TaskType,
    TurnSubtype,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dataset"
CJK = re.compile(r"[\u4e00-\u9fa5]")


@pytest.fixture(scope="module")
def sessions() -> list[Session]:
    loaded, warnings = read_dataset(sample_dataset_path())
    assert warnings == []
    return loaded


def _tasks(sessions: list[Session]) -> list[tuple[Session, int, list[Node]]]:
    return [(s, i, nodes) for s in sessions for i, nodes in enumerate(s.english_answer_list)]


def _calls(sessions: list[Session]) -> list[Node]:
    return [n for _, _, nodes in _tasks(sessions) for n in nodes if n.action.name not in PSEUDO_ACTIONS]


def _walk_schema(schema: dict[str, Any], root: bool = True) -> list[dict[str, Any]]:
    found = [] if root else [schema]
    for sub in schema.get("properties", {}).values():
        found += _walk_schema(sub, root=False)
    if isinstance(schema.get("items"), dict):
        found += _walk_schema(schema["items"], root=False)
    return found


def _values(value: Any) -> list[Any]:
    out = [value]
    if isinstance(value, dict):
        for v in value.values():
            out += _values(v)
    elif isinstance(value, list):
        for v in value:
            out += _values(v)
    return out


def test_shape_and_ids(sessions: list[Session]) -> None:
    assert len(sessions) >= 8
    assert [s.id for s in sessions] == [f"wild_tool_bench_{n}" for n in range(len(sessions))]
    for s in sessions:
        assert len(s.english_tasks) == 4 and all(t.strip() for t in s.english_tasks)
        assert s.answer_list is not None
        assert [len(t) for t in s.answer_list] == [len(t) for t in s.english_answer_list]
        date = dt.datetime.strptime(s.english_env_info, "%Y-%m-%d %H:%M:%S %A")  # real weekday names
        assert date.strftime("%Y-%m-%d %H:%M:%S %A") == s.english_env_info


def test_all_task_types_and_turn_subtypes(sessions: list[Session]) -> None:
    types = Counter(t for s in sessions for t in s.english_task_types)
    subtypes = Counter(t for s in sessions for t in s.english_turn_subtypes)
    assert set(types) == set(TaskType)
    assert set(subtypes) == set(TurnSubtype)


def test_every_task_closes_with_prepare(sessions: list[Session]) -> None:
    for s, i, nodes in _tasks(sessions):
        names = [n.action.name for n in nodes]
        assert names.count(PREPARE_ACTION) == 1, (s.id, i)
        last = names.index(PREPARE_ACTION)
        anc = ancestors([n.dependency_list for n in nodes])
        assert anc[last] == set(range(len(nodes))) - {last}, (s.id, i)  # runs after everything else
        kind = "chat" if s.english_task_types[i] is TaskType.CHAT else "tool"
        assert nodes[last].action.arguments == {"answer_type": kind}
        assert isinstance(nodes[last].observation, str) and nodes[last].observation
        if s.english_task_types[i] is TaskType.CHAT:
            assert names == [PREPARE_ACTION]


def test_ask_nodes(sessions: list[Session]) -> None:
    asks = [(s, i, n) for s, i, nodes in _tasks(sessions) for n in nodes if n.action.name == ASK_ACTION]
    assert asks
    for s, i, node in asks:
        assert s.english_task_types[i] is TaskType.CLARIFY
        assert isinstance(node.observation, str) and node.observation.endswith("?")
        assert isinstance(node.user_input, str) and node.user_input


def test_step_structures(sessions: list[Session]) -> None:
    same_name_parallel = sequential = mixed = False
    for _, _, nodes in _tasks(sessions):
        deps = [n.dependency_list for n in nodes]
        lv = levels(deps)
        tool_levels = Counter(lv[k] for k, n in enumerate(nodes) if n.action.name not in PSEUDO_ACTIONS)
        names_by_level = Counter(
            (lv[k], n.action.name) for k, n in enumerate(nodes) if n.action.name not in PSEUDO_ACTIONS
        )
        same_name_parallel |= any(c >= 2 for c in names_by_level.values())
        tool_chain = any(
            nodes[d].action.name not in PSEUDO_ACTIONS
            for k, n in enumerate(nodes)
            if n.action.name not in PSEUDO_ACTIONS
            for d in n.dependency_list
        )
        sequential |= tool_chain
        mixed |= tool_chain and max(tool_levels.values(), default=0) >= 2
    assert same_name_parallel and sequential and mixed


def test_observations_are_json_text(sessions: list[Session]) -> None:
    for node in _calls(sessions):
        assert isinstance(node.observation, str)
        assert isinstance(json.loads(node.observation), (dict, list))


def test_gold_arguments_cover_nested_arrays_and_cjk(sessions: list[Session]) -> None:
    args = [n.action.arguments for n in _calls(sessions)]
    top_values = [v for a in args for v in a.values()]
    assert any(isinstance(v, dict) for v in top_values)
    assert any(isinstance(v, list) for v in top_values)
    assert any(isinstance(v, list) and v and isinstance(v[0], dict) for v in top_values)
    assert any(isinstance(v, float) for a in args for v in _values(a))
    assert any(isinstance(v, str) and CJK.search(v) for a in args for v in _values(a))


def test_tool_parameter_kinds(sessions: list[Session]) -> None:
    schemas = [
        sub for s in sessions for t in s.english_tools for sub in _walk_schema(t["function"]["parameters"])
    ]
    assert any(sub.get("type") == "float" for sub in schemas)
    assert any("enum" in sub for sub in schemas)
    assert any(sub.get("type") == "array" and isinstance(sub.get("items"), dict) for sub in schemas)
    assert any(sub.get("type") == "object" and sub.get("properties") for sub in schemas)


def test_tools_are_copied_from_the_release_pool(sessions: list[Session]) -> None:
    with gzip.open(FIXTURES / "official_tools_en.jsonl.gz", "rt", encoding="utf-8") as handle:
        pool = [json.loads(line) for line in handle]
    for s in sessions:
        assert s.english_tools in pool, s.id


def test_gold_arguments_pass_the_checker(sessions: list[Session]) -> None:
    """The oracle's own calls must score correct (schema check and match against themselves)."""
    for s in sessions:
        tools = convert_tools(s.english_tools)
        for nodes in s.english_answer_list:
            for node in nodes:
                if node.action.name in PSEUDO_ACTIONS:
                    continue
                text = json.dumps(node.action.arguments, ensure_ascii=False)
                assert check_arguments(tools, node.action.name, text, text) == "correct", (s.id, node)


def test_readme_describes_every_session(sessions: list[Session]) -> None:
    readme = (data_dir() / "README.md").read_text(encoding="utf-8")
    for s in sessions:
        assert f"| `{s.id}` |" in readme
