"""The paper harness's lenient argument checker, one rule per row (paper-harness.md §3.1,
`check_arguments` / `check_single_arguments`, and the pairing of step 3)."""

from __future__ import annotations

import pytest

from wtb_local.benchmark.protocols.harness_scoring import check_task_arguments
from wtb_local.benchmark.protocols.lenient import LenientCheckError, check_call, check_value, rouge_l

TOOL = {"type": "function", "function": {"name": "getWeather", "parameters": {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city name"},
        "days": {"type": "integer", "description": "Days ahead"},
        "unit": {"type": "string", "description": "Unit: celsius or fahrenheit"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "where": {"type": "object", "properties": {"lang": {"type": "string", "description": "language"}}},
        "flag": {"type": "boolean", "description": "a flag, may be null"},
        "spot": {"type": "string", "description": "lat,lon"},
    },
    "required": ["city"],
}}}

# (case, predicted, gold, call score, per-argument scores, error labels) — §3.1 `check_arguments`
CASES = [
    ("equal values", {"city": "Paris"}, {"city": "Paris"}, 1.0, {"city": 1.0}, []),
    ("missing required: score 0 at once", {"days": 2}, {"city": "Paris", "days": 2}, 0.0, {"city": 0.0},
     ["miss required params"]),
    ("strings equal ignoring case", {"city": "paris"}, {"city": "Paris"}, 1.0, {"city": 1.0}, []),
    ("strings equal ignoring whitespace", {"city": "New York"}, {"city": "NewYork"}, 1.0, {"city": 1.0}, []),
    ("ints compare as floats", {"city": "Paris", "days": 3}, {"city": "Paris", "days": 3.0}, 1.0,
     {"city": 1.0, "days": 1.0}, []),
    ("a bool is not an int", {"city": "Paris", "days": True}, {"city": "Paris", "days": 1}, 0.5,
     {"city": 1.0, "days": 0.0}, ["type error"]),
    ("unequal numbers", {"city": "Paris", "days": 3}, {"city": "Paris", "days": 4}, 0.5,
     {"city": 1.0, "days": 0.0}, ["param value error"]),
    ("a name not in the schema", {"city": "Paris", "zzz": 1}, {"city": "Paris"}, 0.5,
     {"city": 1.0, "zzz": 0.0}, ["param hallucination"]),
    ("optional gold argument left out is free", {"city": "Paris"}, {"city": "Paris", "days": 3}, 1.0,
     {"city": 1.0}, []),
    ("extra argument whose value is in the description", {"city": "Paris", "unit": "Celsius"},
     {"city": "Paris"}, 1.0, {"city": 1.0, "unit": 1.0}, []),
    ("extra argument not in the description", {"city": "Paris", "unit": "kelvin"}, {"city": "Paris"}, 0.5,
     {"city": 1.0, "unit": 0.0}, ["param value hallucination"]),
    ("extra None where the description mentions null", {"city": "Paris", "flag": None}, {"city": "Paris"},
     1.0, {"city": 1.0, "flag": 1.0}, []),
    ("strings score ROUGE-L F over jieba tokens", {"city": "Paris France"},
     {"city": "the city of Paris France"}, 0.5, {"city": 0.5}, ["param value error"]),
    ("two lat,lon strings are equal", {"city": "Paris", "spot": "48.85,2.35"},
     {"city": "Paris", "spot": "48.86,2.29"}, 1.0, {"city": 1.0, "spot": 1.0}, []),
    ("arrays compare sorted", {"city": "Paris", "tags": ["b", "a"]}, {"city": "Paris", "tags": ["a", "b"]},
     1.0, {"city": 1.0, "tags": 1.0}, []),
    ("arrays of another length", {"city": "Paris", "tags": ["a"]}, {"city": "Paris", "tags": ["a", "b"]},
     0.5, {"city": 1.0, "tags": 0.0}, ["param value error"]),
    ("nested key not in the schema", {"city": "Paris", "where": {"x": "fr"}},
     {"city": "Paris", "where": {"lang": "fr"}}, 0.5, {"city": 1.0, "where": 0.0}, ["param hallucination"]),
    ("nested values recurse", {"city": "Paris", "where": {"lang": "FR"}},
     {"city": "Paris", "where": {"lang": "fr"}}, 1.0, {"city": 1.0, "where": 1.0}, []),
    ("JSON text arguments are decoded", '{"city": "Paris"}', {"city": "Paris"}, 1.0, {"city": 1.0}, []),
]


@pytest.mark.parametrize(("case", "pred", "gold", "score", "scores", "errors"), CASES, ids=[c[0] for c in CASES])
def test_check_call_rules(case: str, pred: object, gold: dict, score: float, scores: dict, errors: list) -> None:
    assert check_call(pred, gold, TOOL) == (score, scores, errors)


def test_no_arguments_on_both_sides_is_correct() -> None:
    tool = {"function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}
    assert check_call({}, {}, tool) == (1.0, {}, [])


@pytest.mark.parametrize(("pred", "gold", "schema"), [
    ({}, {"days": 2}, None),  # no predicted arguments, gold has some, none required: the harness divides by 0
    ('{"city": ', {"city": "x"}, None),  # not JSON
])
def test_what_the_harness_raises_on(pred: object, gold: dict, schema: object) -> None:
    tool = {"function": {"name": "f", "parameters": {"type": "object", "properties": {"days": {"type": "integer"},
                                                                                      "city": {"type": "string"}}}}}
    with pytest.raises(LenientCheckError):
        check_call(pred, gold, tool)


def test_a_schema_node_without_type_raises() -> None:
    with pytest.raises(LenientCheckError):
        check_value("a", "b", {"description": "no type"})


def test_rouge_is_case_sensitive_and_reads_chinese_words() -> None:
    assert rouge_l("Paris", "paris") == 0.0  # check_value compares case-insensitively before ROUGE
    assert rouge_l("月亮代表我的心", "月亮代表") == 0.4  # jieba: 月亮/代表/我/的/心 vs 月亮/代表


def _nodes(*arguments: dict) -> list[dict]:
    return [{"action": {"name": "getWeather", "arguments": a}, "dependency_list": []} for a in arguments] + [
        {"action": {"name": "prepare_to_answer", "arguments": {"answer_type": "tool"}}, "dependency_list": []}]


def _steps(*arguments: dict) -> list[dict]:
    calls = [{"id": f"c{i}", "function": {"name": "getWeather", "arguments": a}} for i, a in enumerate(arguments)]
    return [{"content": None, "tool_calls": calls}, {"content": "done", "tool_calls": None}]


def test_threshold_is_a_mean_of_at_least_0_7() -> None:
    """§3.1 step 3: a pair fails when its score is < 0.7; 3 of 4 arguments right (0.75) passes."""
    four = {"city": "Paris", "days": 1, "unit": "celsius", "tags": ["a"]}
    three_of_four = {**four, "days": 2}
    ok, failing, _ = check_task_arguments(_nodes(four), _steps(three_of_four), [TOOL])
    assert (ok, failing) == (True, [])
    two_of_three = {"city": "Paris", "days": 2, "unit": "celsius"}
    ok, failing, errors = check_task_arguments(_nodes({"city": "Paris", "days": 1, "unit": "celsius"}),
                                               _steps(two_of_three), [TOOL])
    assert ok is False
    assert failing[0]["score"] == pytest.approx(2 / 3)
    assert errors == [{"idx": 0, "error_type": ["param value error"]}]


def test_calls_pair_by_name_across_steps_best_score_first() -> None:
    """§3.1 step 3: predicted calls pair greedily with the best-scoring unpaired gold call of that name,
    whatever their order; the error list is the last gold candidate's (harness quirk)."""
    ok, failing, _ = check_task_arguments(_nodes({"city": "Paris"}, {"city": "Rome"}),
                                          _steps({"city": "Rome"}, {"city": "Paris"}), [TOOL])
    assert (ok, failing) == (True, [])
    ok, failing, errors = check_task_arguments(_nodes({"city": "Paris"}, {"city": "Rome"}),
                                               _steps({"city": "Oslo"}, {"city": "Paris"}), [TOOL])
    assert ok is False
    # Oslo takes Paris (a 0.0 tie keeps the earlier gold), so Paris is left with Rome: both pairs fail
    assert [f["score"] for f in failing] == [0.0, 0.0]
    assert failing[0]["gold_arguments"] == {"city": "Rome"}  # last evaluated, not the one paired
    assert errors == [{"idx": 0, "error_type": ["param value error"]}] * 2


def test_predicted_and_gold_names_must_agree() -> None:
    with pytest.raises(LenientCheckError):
        check_task_arguments(_nodes({"city": "Paris"}), _steps({"city": "Paris"}, {"city": "Rome"}), [TOOL])
