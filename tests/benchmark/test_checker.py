"""The argument checker against the reference's verdicts (checker.jsonl, loop_checks.jsonl) and the
rules of docs/evaluation.md §5 that the vectors do not reach."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wtb_local import check_arguments
from wtb_local.benchmark.evaluator.checker import check_arguments as direct_check

VECTORS = Path(__file__).parents[1] / "fixtures" / "vectors"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _same_verdict(got: str, expected: str) -> bool:
    # The reference's key lists in "args keys mismatch" depend on the hash seed (vectors README).
    if expected.startswith("error_match: args keys mismatch"):
        return got.split(" (")[0] == expected.split(" (")[0]
    return got == expected


@pytest.mark.parametrize("name", ["checker.jsonl", "sessions/loop_checks.jsonl"])
def test_reference_vectors(name: str) -> None:
    rows = _rows(VECTORS / name)
    assert len(rows) > 400
    mismatches = []
    for i, row in enumerate(rows):
        got = check_arguments(row["tools"], row["name"], row["predict_arguments"], row["answer_arguments"])
        if not _same_verdict(got, row["expected"]):
            mismatches.append((i, row["expected"], got))
    assert mismatches == []


def test_public_api_is_the_checker() -> None:
    assert check_arguments is direct_check


def _tool(name: str, properties: dict, required: list | None = None, **extra: object) -> dict:
    parameters = {"type": "object", "properties": properties, "required": required or [], **extra}
    return {"type": "function", "function": {"name": name, "description": "d", "parameters": parameters}}


STR = {"type": "string"}
TOOLS = [
    _tool(
        "f",
        {
            "city": STR,
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "tags": {"type": "array", "items": STR},
            "opts": {"type": "object", "properties": {"a": STR}, "required": ["a"]},
            "free": {"type": "object"},
            "loose": {"type": "object", "properties": {}, "additionalProperties": True},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string", "enum": ["x"]}]},
            "multi": {"type": ["integer", "null"]},
            "untyped": {"description": "no type means string"},
            "weird": {"type": "decimal"},
        },
        ["city"],
    )
]


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        ('{"city": "Paris"}', '{"city": "Paris"}', "correct"),
        ("{city: Paris}", '{"city": "Paris"}', "error: args invalid json format"),
        ("{}", '{"city": "Paris"}', "error_schema: required args missing"),
        ('{"city": "Paris", "zzz": 1}', '{"city": "Paris"}', "error_schema: args not defined"),
        ("[1]", '{"city": "Paris"}', "error_schema: args type inconsistent"),
        ('{"city": 3}', '{"city": "Paris"}', "error_schema: nested args type inconsistent"),
        ('{"city": "P", "unit": "k"}', '{"city": "P"}', "error_schema: nested args value not in enum"),
        ('{"city": "P", "opts": {}}', '{"city": "P"}', "error_schema: required nested args missing"),
        (
            '{"city": "P", "opts": {"a": "1", "b": 2}}',
            '{"city": "P"}',
            "error_schema: nested args not defined",
        ),
        ('{"city": "P", "free": {"k": 1}}', '{"city": "P"}', "error_schema: nested args not defined"),
        ('{"city": "P", "loose": {"k": 1}}', '{"city": "P", "loose": {"k": 1}}', "correct"),
        ('{"city": "P", "tags": ["a", 1]}', '{"city": "P"}', "error_schema: nested args type inconsistent"),
        # bool is an int in Python: true passes an integer check, then fails the type match
        (
            '{"city": "P", "count": true}',
            '{"city": "P", "count": 1}',
            "error_match: value type inconsistent at 'count'",
        ),
        (
            '{"city": "P", "ratio": 1}',
            '{"city": "P", "ratio": 1.0}',
            "error_match: value type inconsistent at 'ratio'",
        ),
        ('{"city": "P", "count": 2}', '{"city": "P", "count": 3}', "error_match: value mismatch at 'count'"),
        ('{"city": "P", "either": "x"}', '{"city": "P", "either": "x"}', "correct"),
        # all anyOf branches fail: the first branch's error
        ('{"city": "P", "either": "y"}', '{"city": "P"}', "error_schema: nested args type inconsistent"),
        ('{"city": "P", "multi": null}', '{"city": "P", "multi": null}', "correct"),
        ('{"city": "P", "multi": "s"}', '{"city": "P"}', "error_schema: nested args type inconsistent"),
        ('{"city": "P", "untyped": 1}', '{"city": "P"}', "error_schema: nested args type inconsistent"),
        ('{"city": "P", "weird": [1]}', '{"city": "P", "weird": [1]}', "correct"),
        (
            '{"city": "P", "tags": ["a"]}',
            '{"city": "P", "tags": ["a", "b"]}',
            "error_match: array length mismatch at 'tags'",
        ),
        (
            '{"city": "P", "tags": ["a"]}',
            '{"city": "P", "tags": ["zzzz"]}',
            "error_match: string similarity too low at 'tags[0]' (edit score: 0.00)",
        ),
        (
            '{"city": "P", "opts": {"a": "xy"}}',
            '{"city": "P", "opts": {"a": "qq"}}',
            "error_match: string similarity too low at 'opts.a' (edit score: 0.00)",
        ),
        ('{"city": "New  York"}', '{"city": "newyork"}', "correct"),
        (
            '{"city": "bye bye"}',
            '{"city": "bye bye now"}',
            "error_match: string similarity too low at 'city' (rouge score: 0.67)",
        ),
        ('{"city": "..."}', '{"city": "..........."}', "error_match: rouge calculation failed at 'city'"),
        (
            '{"city": "Paris", "unit": "c"}',
            '{"city": "Paris", "count": 1}',
            "error_match: args keys mismatch (missing: ['count'], extra: ['unit'])",
        ),
        (
            '{"city": "Paris", "unit": "c", "flag": true}',
            '{"city": "Paris"}',
            "error_match: args keys mismatch (extra: ['flag', 'unit'])",
        ),
        ('{"city": "Paris"}', '["Paris"]', "error_match: value type inconsistent"),
        ('{"city": "Paris"}', "not json", "error: args invalid json format"),
    ],
)
def test_rules(predicted: str, gold: str, expected: str) -> None:
    assert check_arguments(TOOLS, "f", predicted, gold) == expected


def test_undefined_tool_and_duplicate_definition() -> None:
    assert check_arguments(TOOLS, "nope", "{}", "{}") == "error_schema: tool not defined"
    first = _tool("g", {"a": STR}, ["a"])
    last = _tool("g", {"b": STR}, ["b"])
    assert check_arguments([first, last], "g", '{"b": "x"}', '{"b": "x"}') == "correct"
    assert (
        check_arguments([first, last], "g", '{"a": "x"}', '{"a": "x"}')
        == "error_schema: required args missing"
    )
    # the tool name is looked up before the arguments are parsed
    assert check_arguments([first], "h", "not json", "{}") == "error_schema: tool not defined"


def test_arguments_given_as_objects_are_serialized() -> None:
    assert check_arguments(TOOLS, "f", {"city": "Paris"}, {"city": "Paris"}) == "correct"
    assert check_arguments(TOOLS, "f", None, {"city": "Paris"}) == "error_schema: args type inconsistent"
    assert check_arguments(TOOLS, "f", {"city": "Rome"}, '{"city": "Paris"}').startswith(
        "error_match: string similarity too low at 'city' (edit score: "
    )


def test_schema_lookups_that_raise_become_comparison_failures() -> None:
    # A parameter named "properties" makes the reference read the other parameters' schemas from it; an
    # array value then looks up "items" on a string and raises.
    tools = [
        _tool("q", {"properties": {"type": "object", "description": "x"}, "description": {"type": "array"}})
    ]
    got = check_arguments(tools, "q", '{"description": []}', '{"description": []}')
    assert got == "error: comparison failed - 'str' object has no attribute 'get'"


def test_cjk_strings_are_segmented_with_jieba() -> None:
    tools = [_tool("c", {"q": STR})]
    assert check_arguments(tools, "c", '{"q": "北京市的天气预报"}', '{"q": "北京市的天气预报"}') == "correct"
    got = check_arguments(tools, "c", '{"q": "上海明天的天气怎么样呢"}', '{"q": "北京市今天的空气质量指数"}')
    assert got.startswith("error_match: string similarity too low at 'q' (rouge score: ")


def test_jieba_is_imported_only_for_cjk_text() -> None:
    code = (
        "import sys, json\n"
        "from wtb_local import check_arguments\n"
        "t=[{'type':'function','function':{'name':'c','parameters':{'type':'object',"
        "'properties':{'q':{'type':'string'}}}}}]\n"
        'check_arguments(t,\'c\',\'{"q": "a long english phrase"}\',\'{"q": "another long phrase"}\')\n'
        "assert 'jieba' not in sys.modules\n"
        'print(check_arguments(t,\'c\',\'{"q": "北京"}\',\'{"q": "北京市"}\'))\n'
        "assert 'jieba' in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("error_match")
    assert "Building prefix dict" not in done.stderr  # jieba's log is silenced


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["city", "tags", "opts", "a", "x"]), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(predicted=_json, gold=_json)
def test_never_raises(predicted: object, gold: object) -> None:
    got = check_arguments(TOOLS, "f", predicted, gold)
    assert isinstance(got, str) and (got == "correct" or got.startswith("error"))
