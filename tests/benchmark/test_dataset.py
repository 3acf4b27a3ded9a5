"""Loader and validation: the release schema's checks, one-line errors, warnings, name resolution."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from wtb_local.benchmark.dataset import (
    DatasetError,
    dataset_sha256,
    load_dataset,
    read_dataset,
    resolve_dataset,
)
from wtb_local.benchmark.dataset.dag import ancestors, find_cycle, levels
from wtb_local.contract.resources import sample_dataset_path

FIXTURES = Path(__file__).parents[1] / "fixtures" / "dataset"


def _vectors_rows() -> list[dict[str, Any]]:
    with gzip.open(FIXTURES / "vectors_dataset.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _write(path: Path, rows: list[Any]) -> Path:
    lines = [row if isinstance(row, str) else json.dumps(row, ensure_ascii=False) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _base() -> dict[str, Any]:
    """A small valid session: a tool task with two parallel calls and a chat task."""
    tool = {
        "type": "function",
        "function": {
            "name": "getWeather",
            "description": "Weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City."}},
                "required": ["city"],
            },
        },
    }
    task0 = [
        {
            "idx": 0,
            "action": {"name": "getWeather", "arguments": {"city": "Paris"}},
            "observation": "{}",
            "dependency_list": [],
        },
        {
            "idx": 1,
            "action": {"name": "getWeather", "arguments": {"city": "Rome"}},
            "observation": "{}",
            "dependency_list": [],
        },
        {
            "idx": 2,
            "action": {"name": "prepare_to_answer", "arguments": {"answer_type": "tool"}},
            "observation": "Sunny in both.",
            "dependency_list": [0, 1],
        },
    ]
    task1 = [
        {
            "idx": 0,
            "action": {"name": "prepare_to_answer", "arguments": {"answer_type": "chat"}},
            "observation": "You're welcome.",
            "dependency_list": [],
        }
    ]
    return {
        "id": "wild_tool_bench_0",
        "english_env_info": "2025-01-08 10:00:00 Wednesday",
        "english_tools": [tool],
        "english_tasks": ["Weather in Paris and Rome?", "Thanks!"],
        "english_answer_list": [task0, task1],
        "english_task_types": ["Parallel Multi-Tool", "Chat"],
        "english_turn_subtypes": ["Partial Information"],
        "answer_list": copy.deepcopy([task0, task1]),
    }


# --- loading valid files ----------------------------------------------------------------------------


def test_vectors_dataset_loads_cleanly(tmp_path: Path) -> None:
    path = _write(tmp_path / "vectors.jsonl", _vectors_rows())
    sessions, warnings = read_dataset(path)
    assert len(sessions) == 64
    assert [s.id for s in sessions] == [f"wild_tool_bench_{n}" for n in range(64)]
    assert all(len(s.english_tasks) == 4 for s in sessions)
    assert warnings == []


def test_sample_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    sessions = load_dataset("sample")
    assert len(sessions) >= 8
    assert resolve_dataset("sample") == sample_dataset_path()
    assert capsys.readouterr().err == ""


def test_path_and_blank_lines(tmp_path: Path) -> None:
    second = _base()
    second["id"] = "wild_tool_bench_1"
    path = tmp_path / "d.jsonl"
    path.write_text("\n" + json.dumps(_base()) + "\n\n   \n" + json.dumps(second) + "\n\n", encoding="utf-8")
    sessions = load_dataset(path)
    assert [s.index for s in sessions] == [0, 1]
    assert load_dataset(str(path))[1].id == "wild_tool_bench_1"


def test_dataset_sha256(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", [_base()])
    assert dataset_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()


# --- refusals -----------------------------------------------------------------------------------------


def _set(path: str, value: Any):
    """A mutation setting a dotted/indexed path, e.g. `english_answer_list.0.1.dependency_list`."""

    def mutate(row: dict[str, Any]) -> None:
        keys = [int(k) if k.isdigit() else k for k in path.split(".")]
        target: Any = row
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return mutate


def _delete(path: str):
    def mutate(row: dict[str, Any]) -> None:
        keys = [int(k) if k.isdigit() else k for k in path.split(".")]
        target: Any = row
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]

    return mutate


PARAMS = "english_tools.0.function.parameters"
REFUSALS = [
    (_delete("english_tasks"), "d.jsonl:1: wild_tool_bench_0: english_tasks: missing"),
    (
        _set("english_env_info", 5),
        "d.jsonl:1: wild_tool_bench_0: english_env_info: Input should be a valid string (got number)",
    ),
    (
        _set("english_answer_list.0.1.dependency_list", "a"),
        "d.jsonl:1: wild_tool_bench_0: english_answer_list[0][1].dependency_list: Input should be a valid list (got string)",
    ),
    (
        _delete("english_answer_list.0.0.action"),
        "d.jsonl:1: wild_tool_bench_0: english_answer_list[0][0].action: missing",
    ),
    (
        _set("english_task_types.1", "Chitchat"),
        (
            "d.jsonl:1: wild_tool_bench_0: english_task_types[1]: unknown task type 'Chitchat' (known: Single-Tool, "
            "Parallel Multi-Tool, Sequential Multi-Tool, Mixed Multi-Tool, Clarify, Chat)"
        ),
    ),
    (
        _set("english_turn_subtypes.0", "Ellipsis"),
        "english_turn_subtypes[0]: unknown turn subtype 'Ellipsis'",
    ),
    (
        _set("english_task_types", ["Chat"]),
        "d.jsonl:1: wild_tool_bench_0: english_task_types: has 1 entries, expected 2 (one per task; english_tasks has 2)",
    ),
    (
        _set("english_turn_subtypes", ["Partial Information", "Partial Information"]),
        "english_turn_subtypes: has 2 entries, expected 1 (one per task after the first; english_tasks has 2)",
    ),
    (_delete("english_turn_subtypes"), "english_turn_subtypes: has 0 entries, expected 1"),
    (_set("answer_list", [[]]), "answer_list: has 1 entries, expected 2"),
    (_set("english_answer_list", [[]]), "english_answer_list: has 1 entries, expected 2"),
    (_set("english_tasks", []), "english_tasks: a session needs at least one task"),
    (_set("english_answer_list.1", []), "wild_tool_bench_0: english_answer_list[1]: task has no node"),
    (
        _set("english_answer_list.0.2.dependency_list", [0, 7]),
        "d.jsonl:1: wild_tool_bench_0: english_answer_list[0][2].dependency_list: position 7 out of range (task has 3 nodes)",
    ),
    (_set("english_answer_list.0.2.dependency_list", [-1]), "position -1 out of range (task has 3 nodes)"),
    (
        _set("english_answer_list.0.2.dependency_list", ["1"]),
        "english_answer_list[0][2].dependency_list: position '1' is not an integer",
    ),
    (_set("english_answer_list.0.2.dependency_list", [1.0]), "position 1.0 is not an integer"),
    (
        _set("english_answer_list.0.1.dependency_list", [1]),
        "wild_tool_bench_0: english_answer_list[0]: dependency cycle 1 -> 1 (each node depends on the next)",
    ),
    (
        _set("english_answer_list.0.0.dependency_list", [2]),
        "english_answer_list[0]: dependency cycle 0 -> 2 -> 0 (each node depends on the next)",
    ),
    (
        _set("english_answer_list.1.0.action.name", "ask_user_for_required_parameters"),
        "english_answer_list[1][0].user_input: an ask node needs the user's answer (a string)",
    ),
    (_set("id", 3), "d.jsonl:1: id: expected a string, got number"),
    (_delete("id"), "d.jsonl:1: id: missing"),
    (_set("id", "session_0"), "d.jsonl:1: session_0: id: 'session_0' is not of the form wild_tool_bench_<N>"),
    (_set("id", "wild_tool_bench_1"), "d.jsonl:1: wild_tool_bench_1: id: expected 'wild_tool_bench_0' here"),
    (
        _set(f"{PARAMS}.required", "city"),
        f"{PARAMS.replace('.0.', '[0].')}.required: must be a list, got string",
    ),
    (
        _set(f"{PARAMS}.properties.city", "string"),
        "english_tools[0].function.parameters.properties.city: schema node must be an object, got string",
    ),
    (
        _set(f"{PARAMS}.properties.city", {"anyOf": []}),
        "english_tools[0].function.parameters.properties.city.anyOf: must be a non-empty list of schemas",
    ),
    (
        _set(f"{PARAMS}.properties.city", {"type": "array", "items": [{"type": "string"}]}),
        "parameters.properties.city.items: schema node must be an object, got array",
    ),
    (
        _set(f"{PARAMS}.properties.city", {"type": "string", "enum": "ab"}),
        "properties.city.enum: must be a list, got string",
    ),
    (
        _set(f"{PARAMS}.properties.city", {"type": {"name": "string"}}),
        "properties.city.type: expected a type name or a list of them, got object",
    ),
    (
        _set(f"{PARAMS}.properties", []),
        "english_tools[0].function.parameters.properties: must be an object, got array",
    ),
    (_delete(PARAMS), "english_tools[0].function.parameters: missing"),
    (_set(PARAMS, None), "english_tools[0].function.parameters: schema node must be an object, got null"),
    (
        _set("english_tools.0.function", "getWeather"),
        "english_tools[0].function: expected an object, got string",
    ),
    (
        _set("english_tools.0.function.name", ""),
        "english_tools[0].function.name: expected a non-empty string",
    ),
    (
        _set("english_tools.0.function.name", "prepare_to_answer"),
        "'prepare_to_answer' is reserved for a pseudo-action",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), REFUSALS)
def test_refusals(tmp_path: Path, mutate, expected: str) -> None:
    row = _base()
    mutate(row)
    path = _write(tmp_path / "d.jsonl", [row])
    with pytest.raises(DatasetError) as info:
        read_dataset(path)
    message = str(info.value)
    assert "\n" not in message
    assert expected.replace("d.jsonl", str(path)) in message
    assert message.startswith(f"{path}:1: ")
    assert isinstance(info.value, ValueError)


def test_error_attributes(tmp_path: Path) -> None:
    row = _base()
    row["english_answer_list"][0][2]["dependency_list"] = [9]
    good = _base()
    second = copy.deepcopy(row)
    second["id"] = "wild_tool_bench_1"
    path = _write(tmp_path / "d.jsonl", [good, second])
    with pytest.raises(DatasetError) as info:
        read_dataset(path)
    error = info.value
    assert (error.path, error.line, error.session_id) == (str(path), 2, "wild_tool_bench_1")
    assert error.field == "english_answer_list[0][2].dependency_list"
    assert error.reason == "position 9 out of range (task has 3 nodes)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"id": "wild_tool_bench_0",',
            "d.jsonl:1: malformed JSON: Expecting property name enclosed in double quotes (column 28)",
        ),
        ("[1, 2]", "d.jsonl:1: expected a JSON object, got array"),
        ("null", "d.jsonl:1: expected a JSON object, got null"),
    ],
)
def test_malformed_lines(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(
        DatasetError,
        match="^"
        + expected.replace("d.jsonl", str(path)).replace("(", r"\(").replace(")", r"\)").replace("[", r"\["),
    ):
        read_dataset(path)


def test_ids_follow_line_positions(tmp_path: Path) -> None:
    rows = [_base(), _base()]  # both say wild_tool_bench_0
    path = _write(tmp_path / "d.jsonl", rows)
    with pytest.raises(DatasetError, match=r":2: wild_tool_bench_0: id: expected 'wild_tool_bench_1' here"):
        read_dataset(path)


def test_line_numbers_count_blank_lines(tmp_path: Path) -> None:
    bad = _base()
    bad["id"] = "wild_tool_bench_1"
    bad["english_task_types"] = ["Chat"]
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(_base()) + "\n\n\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"d\.jsonl:4: wild_tool_bench_1: english_task_types"):
        read_dataset(path)


def test_file_level_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n \n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"empty\.jsonl: empty dataset \(no sessions\)$"):
        read_dataset(empty)
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(json.dumps(_base()).encode() + b"\n\xff\xfe\n")
    with pytest.raises(DatasetError, match=r"bin\.jsonl:2: not UTF-8 text"):
        read_dataset(binary)
    with pytest.raises(
        DatasetError, match=r"nope\.jsonl: no such file \(or use a dataset name: sample, release\)"
    ):
        load_dataset(tmp_path / "nope.jsonl")
    with pytest.raises(DatasetError, match="no such file"):
        load_dataset("no-such-dataset-name")


# --- warnings -------------------------------------------------------------------------------------------


def test_pseudo_action_sharing_a_step_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    row = _base()
    row["english_answer_list"][0][2]["dependency_list"] = [0]  # prepare may run alongside node 1
    path = _write(tmp_path / "d.jsonl", [row])
    sessions, warnings = read_dataset(path)
    assert len(sessions) == 1
    assert warnings == [
        (
            f"{path}:1: wild_tool_bench_0: english_answer_list[0][2]: pseudo-action 'prepare_to_answer' could "
            "share a step with node(s) 1 (getWeather)"
        )
    ]
    load_dataset(path)
    assert capsys.readouterr().err == f"warning: {warnings[0]}\n"
    load_dataset(path, quiet=True)
    assert capsys.readouterr().err == ""


def test_ask_before_call_does_not_warn_but_parallel_ask_does(tmp_path: Path) -> None:
    row = _base()
    ask = {
        "idx": 0,
        "action": {"name": "ask_user_for_required_parameters", "arguments": {}},
        "observation": "Which city?",
        "user_input": "Paris.",
        "dependency_list": [],
    }
    call = {
        "idx": 1,
        "action": {"name": "getWeather", "arguments": {"city": "Paris"}},
        "observation": "{}",
        "dependency_list": [0],
    }
    prepare = {
        "idx": 2,
        "action": {"name": "prepare_to_answer", "arguments": {"answer_type": "tool"}},
        "observation": "Sunny.",
        "dependency_list": [1],
    }
    row["english_answer_list"][0] = [ask, call, prepare]
    row["answer_list"][0] = copy.deepcopy([ask, call, prepare])
    assert read_dataset(_write(tmp_path / "a.jsonl", [row]))[1] == []
    call["dependency_list"] = []
    warnings = read_dataset(_write(tmp_path / "b.jsonl", [row]))[1]
    assert len(warnings) == 1
    assert warnings[0].endswith(
        "english_answer_list[0][0]: pseudo-action 'ask_user_for_required_parameters' could share a step with "
        "node(s) 1 (getWeather), 2 (prepare_to_answer)"
    )


def test_tool_warnings(tmp_path: Path) -> None:
    row = _base()
    row["english_tools"].append(copy.deepcopy(row["english_tools"][0]))  # identical twin: harmless
    row["english_answer_list"][0][0]["action"]["name"] = "getForecast"
    row["answer_list"] = None
    _, warnings = read_dataset(_write(tmp_path / "a.jsonl", [row]))
    assert warnings == [
        (
            f"{tmp_path / 'a.jsonl'}:1: wild_tool_bench_0: english_answer_list[0][0].action.name: 'getForecast' "
            "is not among english_tools (the checker reports 'tool not defined')"
        )
    ]
    row["english_tools"][1]["function"]["description"] = "Another description."
    _, warnings = read_dataset(_write(tmp_path / "b.jsonl", [row]))
    assert "english_tools[1].function.name: tool 'getWeather' is defined twice, differently" in warnings[0]


def test_real_tool_pool_passes_schema_checks(tmp_path: Path) -> None:
    """Every tool list of the release's tool pool is accepted, without warnings."""
    with gzip.open(FIXTURES / "official_tools_en.jsonl.gz", "rt", encoding="utf-8") as handle:
        pools = [json.loads(line) for line in handle]
    assert len(pools) == 256
    rows = []
    for n, tools in enumerate(pools):
        row = _base()
        row["id"] = f"wild_tool_bench_{n}"
        row["english_tools"] = tools
        name = tools[0]["function"]["name"]
        for task in (row["english_answer_list"], row["answer_list"]):
            task[0][0]["action"]["name"] = name
            task[0][1]["action"]["name"] = name
        rows.append(row)
    sessions, warnings = read_dataset(_write(tmp_path / "pool.jsonl", rows))
    assert len(sessions) == 256
    assert warnings == []


# --- names: sample and release ----------------------------------------------------------------------------


def test_unavailable_release_is_an_error_never_the_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WTB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("WTB_OFFLINE", "1")
    for name in ("release", None):
        with pytest.raises(DatasetError) as raised:
            resolve_dataset(name)
        message = str(raised.value)
        assert message.startswith(f"{tmp_path / 'Wild-Tool-Bench.jsonl'}: the release dataset is not cached")
        assert "offline mode" in message and "`python -m wtb_local data fetch`" in message
        assert message.endswith("`--dataset sample` runs the embedded 8-session sample")
        assert "\n" not in message
    with pytest.raises(DatasetError):
        load_dataset("release", quiet=True)
    assert capsys.readouterr().err == ""  # no "using the sample instead" warning: nothing was used


def test_run_and_score_share_one_default_dataset() -> None:
    from wtb_local.benchmark.dataset import DEFAULT_DATASET, RELEASE_NAME
    from wtb_local.cli.run import run
    from wtb_local.cli.score import score

    defaults = {command.name: next(p.default for p in command.params if p.name == "dataset")
                for command in (run, score)}
    # score's None means: the dataset the run's manifest records, else DEFAULT_DATASET (its help says so)
    assert defaults == {"run": RELEASE_NAME, "score": None} and DEFAULT_DATASET == RELEASE_NAME
    assert f"else {DEFAULT_DATASET}" in next(p.help for p in score.params if p.name == "dataset")


def test_release_in_cache_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WTB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("WTB_OFFLINE", "1")
    path = _write(tmp_path / "Wild-Tool-Bench.jsonl", [_base()])
    # the cached file is verified on use (tests/benchmark/test_release_verified.py): pin this one as "the release"
    from wtb_local.benchmark.dataset import fetch
    from wtb_local.benchmark.dataset.blob import file_blob_sha1

    monkeypatch.setattr(fetch, "RELEASE_BLOB_SHA1", file_blob_sha1(path))
    assert resolve_dataset("release") == path
    assert [s.id for s in load_dataset()] == ["wild_tool_bench_0"]
    monkeypatch.setattr(fetch, "RELEASE_BLOB_SHA1", "0" * 40)
    with pytest.raises(DatasetError, match="not the pinned release file"):
        resolve_dataset("release")


# --- graph helpers ------------------------------------------------------------------------------------------


def test_dag_helpers() -> None:
    deps = [[], [0], [0], [1, 2], []]
    assert find_cycle(deps) is None
    assert levels(deps) == [0, 1, 1, 2, 0]
    assert ancestors(deps) == [frozenset(), {0}, {0}, {0, 1, 2}, frozenset()]
    assert find_cycle([[1], [2], [0]]) == [0, 1, 2, 0]
    assert find_cycle([[], [2], [3], [1]]) == [1, 2, 3, 1]
    long_chain = [[]] + [[i] for i in range(3000)]  # no recursion limit
    assert levels(long_chain)[-1] == 3000
    assert find_cycle(long_chain) is None
