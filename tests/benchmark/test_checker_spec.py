"""The argument checker rule by rule, expected verdicts derived from the text of docs/evaluation.md §5
(quoted above each group), on synthetic tool schemas that the reference vectors (drawn from the release's
tool pool) never exercise: anyOf, lists of type names, unknown types, null, free-form objects, nested
paths, CJK text."""

from __future__ import annotations

import json
from difflib import SequenceMatcher

import pytest
from rouge import Rouge

from wtb_local.benchmark.evaluator.checker import check_arguments

STR = {"type": "string"}


def _tool(name: str, properties: dict, required: list | None = None, **extra: object) -> dict:
    parameters: dict = {"type": "object", "properties": properties, **extra}
    if required is not None:
        parameters["required"] = required
    return {"type": "function", "function": {"name": name, "description": "d", "parameters": parameters}}


def _check(properties: dict, predicted: str, gold: str, required: list | None = None, **extra: object) -> str:
    return check_arguments([_tool("t", properties, required, **extra)], "t", predicted, gold)


# --- tool lookup -----------------------------------------------------------------------------------------
# "A name that is not among the tools → `error_schema: tool not defined` ... If a name is defined twice,
# the last definition counts."


def test_name_not_among_tools() -> None:
    tools = [_tool("a", {"x": STR})]
    assert check_arguments(tools, "b", '{"x": "1"}', '{"x": "1"}') == "error_schema: tool not defined"
    assert check_arguments([], "a", "{}", "{}") == "error_schema: tool not defined"
    # it comes first in the order of checks, before the JSON parse of the prediction
    assert check_arguments(tools, "b", "not json", "{}") == "error_schema: tool not defined"


def test_tool_defined_twice_last_wins() -> None:
    first = _tool("a", {"x": {"type": "integer"}}, ["x"])
    last = _tool("a", {"x": STR}, ["x"])
    assert check_arguments([first, last], "a", '{"x": "s"}', '{"x": "s"}') == "correct"
    assert check_arguments([last, first], "a", '{"x": "s"}', '{"x": "s"}') == (
        "error_schema: nested args type inconsistent"
    )


# --- JSON parse and the root --------------------------------------------------------------------------
# "predicted text is not valid JSON (Python's `json.loads`) → `error: args invalid json format`."
# "Because the argument object itself is the root, a wrong top-level parameter value is reported with the
# `nested` wording; only missing/undefined top-level keys get the plain wording."
# "Wrong type → `error_schema: args type inconsistent` at path `""`"


@pytest.mark.parametrize("predicted", ["", "{", "{'x': 1}", "{x: 1}", '{"x": 1,}', "None", "True"])
def test_prediction_not_json(predicted: str) -> None:
    assert _check({"x": STR}, predicted, '{"x": "1"}') == "error: args invalid json format"


@pytest.mark.parametrize("predicted", ['["x"]', '"{\\"x\\": \\"1\\"}"', "42", "1.5", "null", "true", "[]"])
def test_prediction_that_is_not_an_object(predicted: str) -> None:
    # the root schema is an object schema: any other JSON value is a type error at path ""
    assert _check({"x": STR}, predicted, '{"x": "1"}') == "error_schema: args type inconsistent"


# --- required / undefined keys ------------------------------------------------------------------------
# "whenever the value is an object (whatever the schema says): first a missing required key →
# `error_schema: required args missing` / `…: required nested args missing`; then, key by key in the
# prediction's order, a key not in `properties` ... unless this nested schema has `additionalProperties`
# literally `true` → `error_schema: args not defined` / `…: nested args not defined`"
# "a root schema made only of the tool's `type`, `required` and `properties` (other root keywords,
# including `additionalProperties`, are ignored)"

NESTED = {
    "o": {"type": "object", "properties": {"a": STR, "b": {"type": "integer"}}, "required": ["a"]},
    "x": STR,
}


@pytest.mark.parametrize(
    ("predicted", "expected"),
    [
        ("{}", "error_schema: required args missing"),
        # missing required is checked before undefined keys and before values
        ('{"zzz": 1}', "error_schema: required args missing"),
        ('{"x": 5}', "error_schema: required args missing"),
        ('{"o": {}}', "error_schema: required nested args missing"),
        ('{"o": {"b": "not an int"}}', "error_schema: required nested args missing"),
        ('{"o": {"a": "1"}, "zzz": 1}', "error_schema: args not defined"),
        ('{"o": {"a": "1", "zzz": 1}}', "error_schema: nested args not defined"),
        # key by key in the prediction's order: the first offending key decides
        ('{"zzz": 1, "o": {"a": 1}}', "error_schema: args not defined"),
        ('{"o": {"a": 1}, "zzz": 1}', "error_schema: nested args type inconsistent"),
        ('{"o": {"zzz": 1, "a": 1}}', "error_schema: nested args not defined"),
        ('{"o": {"a": 1, "zzz": 1}}', "error_schema: nested args type inconsistent"),
    ],
)
def test_required_and_undefined_keys(predicted: str, expected: str) -> None:
    assert _check(NESTED, predicted, '{"o": {"a": "1"}}', ["o"]) == expected


def test_root_additional_properties_is_ignored() -> None:
    got = _check({"x": STR}, '{"x": "1", "y": 2}', '{"x": "1", "y": 2}', additionalProperties=True)
    assert got == "error_schema: args not defined"


def test_root_required_absent_means_nothing_required() -> None:
    assert _check({"x": STR}, "{}", "{}") == "correct"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "object"}, "error_schema: nested args not defined"),  # missing properties = empty
        ({"type": "object", "properties": {}}, "error_schema: nested args not defined"),
        ({"type": "object", "additionalProperties": True}, "correct"),
        ({"type": "object", "properties": {}, "additionalProperties": True}, "correct"),
        # not literally `true`
        ({"type": "object", "additionalProperties": "true"}, "error_schema: nested args not defined"),
        ({"type": "object", "additionalProperties": 1}, "error_schema: nested args not defined"),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}},
            "error_schema: nested args not defined",
        ),
        ({"type": "object", "additionalProperties": False}, "error_schema: nested args not defined"),
    ],
)
def test_free_form_objects(schema: dict, expected: str) -> None:
    assert _check({"o": schema}, '{"o": {"k": 1}}', '{"o": {"k": 1}}') == expected


def test_free_form_object_accepts_the_empty_object() -> None:
    assert _check({"o": {"type": "object"}}, '{"o": {}}', '{"o": {}}') == "correct"


def test_additional_properties_true_only_for_its_own_level() -> None:
    # `additionalProperties` of the outer object does not reach the inner one ("this nested schema")
    schema = {"type": "object", "additionalProperties": True, "properties": {"in": {"type": "object"}}}
    assert _check({"o": schema}, '{"o": {"k": 1}}', '{"o": {"k": 1}}') == "correct"
    assert _check({"o": schema}, '{"o": {"in": {"k": 1}}}', '{"o": {"in": {"k": 1}}}') == (
        "error_schema: nested args not defined"
    )


def test_object_rules_apply_whatever_the_schema_says() -> None:
    # an unknown type name does no type check, but an object value still meets required/properties
    weird = {"type": "decimal", "required": ["a"]}
    assert _check({"w": weird}, '{"w": {}}', '{"w": {}}') == "error_schema: required nested args missing"
    assert _check({"w": {"type": "decimal"}}, '{"w": {"k": 1}}', '{"w": {"k": 1}}') == (
        "error_schema: nested args not defined"
    )
    # and inside an anyOf branch
    either = {"anyOf": [{"type": "object", "properties": {"a": STR}, "required": ["a"]}, {"type": "null"}]}
    assert _check({"e": either}, '{"e": {}}', '{"e": {}}') == "error_schema: required nested args missing"
    assert _check({"e": either}, '{"e": null}', '{"e": null}') == "correct"


# --- types --------------------------------------------------------------------------------------------
# "allowed Python types by `type`: string→str, integer→int, float→float, number→int or float,
# boolean→bool, array→list, object→dict, null→None; no `type` → str; an unknown type name → no type check;
# **[defined here]** a list of type names → the union. Python's `bool` is an `int`, so `true` passes an
# integer check. Wrong type → ... else `error_schema: nested args type inconsistent`."

TYPE_ERROR = "error_schema: nested args type inconsistent"


@pytest.mark.parametrize(
    ("schema", "value", "passes"),
    [
        (STR, '"s"', True),
        (STR, "1", False),
        (STR, "null", False),
        ({"type": "integer"}, "3", True),
        ({"type": "integer"}, "true", True),  # bool is an int
        ({"type": "integer"}, "3.0", False),
        ({"type": "integer"}, "3.5", False),
        ({"type": "integer"}, '"3"', False),
        ({"type": "number"}, "3", True),
        ({"type": "number"}, "3.5", True),
        ({"type": "number"}, "false", True),  # bool is an int, int is a number
        ({"type": "number"}, '"3.5"', False),
        ({"type": "number"}, "null", False),
        ({"type": "float"}, "3.5", True),
        ({"type": "float"}, "3", False),
        ({"type": "boolean"}, "true", True),
        ({"type": "boolean"}, "1", False),
        ({"type": "boolean"}, '"true"', False),
        ({"type": "array"}, "[1, 2]", True),
        ({"type": "array"}, '"[1]"', False),
        ({"type": "array"}, "{}", False),
        ({"type": "object"}, "{}", True),
        ({"type": "object"}, "[]", False),
        ({"type": "null"}, "null", True),
        ({"type": "null"}, "0", False),
        ({"type": "null"}, '""', False),
        ({}, '"s"', True),  # no type means string
        ({"description": "d"}, "1", False),
        ({"description": "d"}, "null", False),
        ({"description": "d"}, "[]", False),
        ({"enum": [1, 2]}, "1", False),  # still a string check
        ({"type": "decimal"}, "1", True),  # unknown: no type check
        ({"type": "decimal"}, '"s"', True),
        ({"type": "decimal"}, "[1]", True),
        ({"type": "decimal"}, "null", True),
        ({"type": ["integer", "null"]}, "null", True),  # a list of names: the union
        ({"type": ["integer", "null"]}, "7", True),
        ({"type": ["integer", "null"]}, '"7"', False),
        ({"type": ["string", "array"]}, "[]", True),
        ({"type": ["string", "array"]}, "{}", False),
    ],
)
def test_type_rules(schema: dict, value: str, passes: bool) -> None:
    got = _check({"p": schema}, f'{{"p": {value}}}', f'{{"p": {value}}}')
    assert got == ("correct" if passes else TYPE_ERROR)


def test_integer_accepts_true_then_the_match_compares_python_types() -> None:
    # schema first (true passes the integer check), then "`true` vs `1` differ"
    got = _check({"n": {"type": "integer"}}, '{"n": true}', '{"n": 1}')
    assert got == "error_match: value type inconsistent at 'n'"


# --- anyOf ---------------------------------------------------------------------------------------------
# "`anyOf` (takes precedence; sibling keywords are ignored): correct if any branch passes, else the first
# branch's error."


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        # sibling `type` ignored
        ({"type": "string", "anyOf": [{"type": "integer"}]}, "3", "correct"),
        ({"type": "integer", "anyOf": [{"type": "string"}]}, "3", TYPE_ERROR),
        # sibling `enum` ignored
        ({"enum": ["a"], "anyOf": [STR]}, '"b"', "correct"),
        # sibling `properties` / `additionalProperties` ignored: the branch's own rules apply
        (
            {"additionalProperties": True, "anyOf": [{"type": "object"}]},
            '{"k": 1}',
            "error_schema: nested args not defined",
        ),
        # any branch passing is enough
        ({"anyOf": [{"type": "integer"}, {"type": "null"}, STR]}, '"s"', "correct"),
        # every branch fails: the first branch's error, not the last one's
        (
            {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "integer"}]},
            '"b"',
            "error_schema: nested args value not in enum",
        ),
        ({"anyOf": [{"type": "integer"}, {"type": "string", "enum": ["a"]}]}, '"b"', TYPE_ERROR),
        (
            {"anyOf": [{"type": "object", "required": ["a"]}, {"type": "string", "enum": ["a"]}]},
            "{}",
            "error_schema: required nested args missing",
        ),
        # anyOf inside anyOf
        ({"anyOf": [{"anyOf": [{"type": "null"}, {"type": "boolean"}]}, STR]}, "false", "correct"),
        (
            {"anyOf": [{"anyOf": [{"type": "null"}, {"type": "boolean", "enum": [True]}]}]},
            "false",
            TYPE_ERROR,
        ),
    ],
)
def test_any_of(schema: dict, value: str, expected: str) -> None:
    assert _check({"p": schema}, f'{{"p": {value}}}', f'{{"p": {value}}}') == expected


def test_any_of_inside_items() -> None:
    schema = {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string", "enum": ["x"]}]}}
    assert _check({"p": schema}, '{"p": [1, "x", 2]}', '{"p": [1, "x", 2]}') == "correct"
    assert _check({"p": schema}, '{"p": [1, "y"]}', '{"p": [1, "y"]}') == TYPE_ERROR


# --- enum ----------------------------------------------------------------------------------------------
# "`enum` (Python `in`) violated → `error_schema: args value not in enum` / `…: nested args value not in
# enum`." (checked after the type)

ENUM_ERROR = "error_schema: nested args value not in enum"


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"type": "integer", "enum": [1, 2, 3]}, "2", "correct"),
        ({"type": "integer", "enum": [1, 2, 3]}, "4", ENUM_ERROR),
        ({"type": "integer", "enum": [1]}, '"1"', TYPE_ERROR),  # the type comes first
        ({"type": "integer", "enum": [True]}, "1", "correct"),  # Python `in`: 1 == True
        ({"type": "boolean", "enum": [1]}, "true", "correct"),
        ({"type": "number", "enum": [0.5, 2]}, "2.0", "error_match: value type inconsistent at 'p'"),
        ({"type": ["string", "null"], "enum": ["a", None]}, "null", "correct"),
        ({"type": ["string", "null"], "enum": ["a"]}, "null", ENUM_ERROR),
        ({"type": "array", "enum": [[1, 2]]}, "[1, 2]", "correct"),
        ({"type": "array", "enum": [[1, 2]]}, "[2, 1]", ENUM_ERROR),
        ({"type": "object", "enum": [{}], "additionalProperties": True}, "{}", "correct"),
        ({"type": "string", "enum": ["Celsius"]}, '"celsius"', ENUM_ERROR),  # no normalization in `in`
        # nested enums: inside items and inside a nested object
        ({"type": "array", "items": {"type": "string", "enum": ["x", "y"]}}, '["x", "y"]', "correct"),
        ({"type": "array", "items": {"type": "string", "enum": ["x", "y"]}}, '["x", "z"]', ENUM_ERROR),
        (
            {"type": "object", "properties": {"u": {"type": "string", "enum": ["c", "f"]}}},
            '{"u": "k"}',
            ENUM_ERROR,
        ),
    ],
)
def test_enum(schema: dict, value: str, expected: str) -> None:
    # the gold equals the prediction, except in the one case that shows the schema passing 2.0 (`2.0 in
    # [0.5, 2]`) and the match then telling 2.0 from the gold's 2
    gold = "2" if expected.startswith("error_match") else value
    assert _check({"p": schema}, f'{{"p": {value}}}', f'{{"p": {gold}}}') == expected


# --- items ---------------------------------------------------------------------------------------------
# "when the value is an array and the schema has `items`: each element recursively, path `path[i]`."


def test_items_recursion() -> None:
    objects = {"type": "array", "items": {"type": "object", "properties": {"a": STR}, "required": ["a"]}}
    assert _check({"p": objects}, '{"p": [{"a": "1"}, {}]}', '{"p": []}') == (
        "error_schema: required nested args missing"
    )
    assert _check({"p": objects}, '{"p": [{"a": "1", "b": 2}]}', '{"p": []}') == (
        "error_schema: nested args not defined"
    )
    free = {"type": "array", "items": {"type": "object"}}
    assert (
        _check({"p": free}, '{"p": [{"k": 1}]}', '{"p": [{"k": 1}]}')
        == "error_schema: nested args not defined"
    )
    nested = {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}
    assert _check({"p": nested}, '{"p": [[1], [2, "x"]]}', '{"p": [[1], [2, 3]]}') == TYPE_ERROR


def test_array_without_items_visits_no_element() -> None:
    # no `items`: elements are not checked, so an object element is not held to any properties
    assert (
        _check({"p": {"type": "array"}}, '{"p": [1, "a", {"k": 1}]}', '{"p": [1, "a", {"k": 1}]}')
        == "correct"
    )


# --- order of checks -----------------------------------------------------------------------------------
# "`check(...)` returns `"correct"` or the first failure, in this order: ... Schema check of the
# prediction ... Match against gold"


def test_schema_errors_come_before_the_match() -> None:
    # the gold has the same undefined key: still a schema error
    assert _check({"x": STR}, '{"x": "1", "y": 2}', '{"x": "1", "y": 2}') == "error_schema: args not defined"
    # the gold lacks the required key too: still a schema error, not a keys mismatch
    assert _check({"x": STR}, "{}", "{}", ["x"]) == "error_schema: required args missing"
    assert _check({"x": STR}, '{"x": 1}', '{"z": 1}') == TYPE_ERROR


# --- match against gold --------------------------------------------------------------------------------
# "Python types differ (`type(a) != type(b)`: `1` vs `1.0`, `true` vs `1` differ) →
# `error_match: value type inconsistent`." ... "reporting ` at '<path>'` when the path is not empty"

ANY = {"type": "decimal"}  # no type check, so the match sees any JSON value


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [("1", "1.0"), ("1.0", "1"), ("true", "1"), ("0", "false"), ('"1"', "1"), ("null", '"x"'), ("[]", '""')],
)
def test_python_types_differ(predicted: str, gold: str) -> None:
    got = _check({"v": ANY}, f'{{"v": {predicted}}}', f'{{"v": {gold}}}')
    assert got == "error_match: value type inconsistent at 'v'"


def test_root_type_differs_without_path() -> None:
    assert _check({"v": ANY}, '{"v": 1}', "[1]") == "error_match: value type inconsistent"


# "objects: key sets differ → `error_match: args keys mismatch (missing: ['a'], extra: ['b'])` (only the
# non-empty parts, Python list repr; **[defined here]** each list `sorted()`"

OPTIONAL = {name: ANY for name in ("a", "b", "c", "d")}


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        ('{"a": 1}', '{"a": 1, "c": 2, "b": 3}', "error_match: args keys mismatch (missing: ['b', 'c'])"),
        ('{"d": 1, "c": 1, "a": 1}', '{"a": 1}', "error_match: args keys mismatch (extra: ['c', 'd'])"),
        (
            '{"d": 1, "b": 1}',
            '{"c": 1, "a": 1}',
            "error_match: args keys mismatch (missing: ['a', 'c'], extra: ['b', 'd'])",
        ),
        # key sets are compared before any value
        ('{"a": 2}', '{"a": 1, "b": 1}', "error_match: args keys mismatch (missing: ['b'])"),
        # values key by key in the gold's key order
        ('{"a": 1, "b": 2}', '{"b": 3, "a": 4}', "error_match: value mismatch at 'b'"),
        ('{"b": 2, "a": 1}', '{"a": 4, "b": 3}', "error_match: value mismatch at 'a'"),
    ],
)
def test_object_match(predicted: str, gold: str, expected: str) -> None:
    assert _check(OPTIONAL, predicted, gold) == expected


def test_nested_keys_mismatch_has_a_path() -> None:
    schema = {"type": "object", "additionalProperties": True}
    got = _check({"o": schema}, '{"o": {"x": 1, "z": 2}}', '{"o": {"y": 1, "x": 1}}')
    assert got == "error_match: args keys mismatch at 'o' (missing: ['y'], extra: ['z'])"


# "arrays: lengths differ → `error_match: array length mismatch`; else element by element (path
# `path[i]`)." ... "compare values key by key (path `key` / `parent.key`)"

DEEP = {
    "a": {
        "type": "object",
        "properties": {
            "b": {
                "type": "array",
                "items": {"type": "object", "properties": {"c": {"type": "integer"}, "s": STR}},
            }
        },
    }
}


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        (
            '{"a": {"b": [{"c": 1}]}}',
            '{"a": {"b": [{"c": 1}, {"c": 2}]}}',
            "error_match: array length mismatch at 'a.b'",
        ),
        (
            '{"a": {"b": [{"c": 1}, {"c": 2}, {"c": 9}]}}',
            '{"a": {"b": [{"c": 1}, {"c": 2}, {"c": 3}]}}',
            "error_match: value mismatch at 'a.b[2].c'",
        ),
        (
            '{"a": {"b": [{"c": 1}, {"s": "xyz"}]}}',
            '{"a": {"b": [{"c": 1}, {"s": "abc"}]}}',
            "error_match: string similarity too low at 'a.b[1].s' (edit score: 0.00)",
        ),
        (
            '{"a": {"b": [{"c": 1}, {}]}}',
            '{"a": {"b": [{"c": 1}, {"c": 1}]}}',
            "error_match: args keys mismatch at 'a.b[1]' (missing: ['c'])",
        ),
        ('{"a": {"b": [{"c": 1}]}}', '{"a": {"b": [{"c": 1}]}}', "correct"),
    ],
)
def test_nested_paths(predicted: str, gold: str, expected: str) -> None:
    assert _check(DEEP, predicted, gold) == expected


def test_array_of_arrays_path() -> None:
    got = _check({"m": {"type": "array"}}, '{"m": [[1, 2], [3, 5]]}', '{"m": [[1, 2], [3, 4]]}')
    assert got == "error_match: value mismatch at 'm[1][1]'"


# "other values: `!=` → `error_match: value mismatch`."


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        ("1", "2", "error_match: value mismatch at 'v'"),
        ("1.5", "1.5", "correct"),
        ("0.1", "0.10", "correct"),
        ("true", "false", "error_match: value mismatch at 'v'"),
        ("null", "null", "correct"),
        ("[1, 2]", "[2, 1]", "error_match: value mismatch at 'v[0]'"),
    ],
)
def test_other_values(predicted: str, gold: str, expected: str) -> None:
    assert _check({"v": ANY}, f'{{"v": {predicted}}}', f'{{"v": {gold}}}') == expected


# "strings: equal → correct; equal after removing all whitespace (Python `str.split()`) and lowercasing
# (`str.lower()`, no Unicode normalization) → correct; if the gold string is shorter than 10 code points
# and `difflib.SequenceMatcher(None, pred, gold).ratio() < 0.8` → `error_match: string similarity too low
# (edit score: 0.xx)`; then, for any length, the ROUGE-L F-score of the **`rouge` package 1.0.1** ... below
# 0.7 → `error_match: string similarity too low (rouge score: 0.xx)`; if the package raises (either string
# empty or only dots) → `error_match: rouge calculation failed`." "Scores in messages use two decimals."


def _edit(predicted: str, gold: str) -> str:
    return f"error_match: string similarity too low at 's' (edit score: {SequenceMatcher(None, predicted, gold).ratio():.2f})"


def _rouge(predicted: str, gold: str) -> str:
    score = Rouge().get_scores(predicted, gold)[0]["rouge-l"]["f"]
    return f"error_match: string similarity too low at 's' (rouge score: {score:.2f})"


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        ("New York", "new york", "correct"),
        ("NEWYORK", "new york", "correct"),
        ("new\tyork\n", " New  York ", "correct"),
        ("new\u3000york", "newyork", "correct"),  # str.split() knows the ideographic space
        ("new\xa0york", "New York", "correct"),  # and the no-break space
        ("", "", "correct"),
        # no Unicode normalization: composed vs decomposed é, and lower() is not casefold()
        ("caf\u00e9", "cafe\u0301", _edit("caf\u00e9", "cafe\u0301")),
        ("STRASSE", "stra\u00dfe", _edit("STRASSE", "stra\u00dfe")),
        # short gold, edit ratio below 0.8
        ("xyz", "abc", "error_match: string similarity too low at 's' (edit score: 0.00)"),
        ("abcd", "abcz", "error_match: string similarity too low at 's' (edit score: 0.75)"),
        ("x", "", "error_match: string similarity too low at 's' (edit score: 0.00)"),
        # short gold, ratio >= 0.8, then ROUGE-L for any length: "red car" vs "red cat" shares one token
        ("red cat", "red car", _rouge("red cat", "red car")),
        ("red car.", "red car", "correct"),
        # gold of 10 code points: no edit-ratio step, straight to ROUGE-L
        ("zzzzzzzzzz", "abcdefghij", "error_match: string similarity too low at 's' (rouge score: 0.00)"),
        # a long gold whose edit ratio is below 0.8 but whose ROUGE-L is 0.75
        ("quick brown fox the", "the quick brown fox", "correct"),
        # the package's ROUGE-L, not the textbook one
        ("bye bye", "bye bye now", "error_match: string similarity too low at 's' (rouge score: 0.67)"),
        ("a b c", "a b c d e f", "error_match: string similarity too low at 's' (rouge score: 0.67)"),
        # the package raises: empty prediction or only dots, with a gold long enough to skip the edit step
        ("", "abcdefghijk", "error_match: rouge calculation failed at 's'"),
        ("....", "a sentence here", "error_match: rouge calculation failed at 's'"),
        ("a sentence here", "...............", "error_match: rouge calculation failed at 's'"),
    ],
)
def test_strings(predicted: str, gold: str, expected: str) -> None:
    got = _check({"s": STR}, _obj("s", predicted), _obj("s", gold))
    assert got == expected


def _obj(key: str, value: object) -> str:
    return json.dumps({key: value}, ensure_ascii=False)


# "with both strings first segmented by `jieba` 0.42.1 (`" ".join(jieba.cut(s))`) when either contains a
# character in U+4E00–U+9FA5"


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        # unsegmented these are one token each (ROUGE-L 0.00); segmented they share 4 of 5/6 words
        ("上海明天的天气怎么样", "北京明天的天气怎么样呢", "correct"),
        # CJK only in the prediction still segments both
        ("abc天气def ghi", "abc def ghi", "correct"),
        ("abc\u4e00def ghi", "abc def ghi", "correct"),  # U+4E00 is inside the range
        # U+9FA6 is outside the range: no segmentation, "abc龦def" stays one token (LCS 1: P 1/2, R 1/3)
        (
            "abc\u9fa6def ghi",
            "abc def ghi",
            "error_match: string similarity too low at 's' (rouge score: 0.40)",
        ),
    ],
)
def test_cjk_segmentation(predicted: str, gold: str, expected: str) -> None:
    assert _check({"s": STR}, _obj("s", predicted), _obj("s", gold)) == expected


def test_gold_length_is_counted_in_code_points() -> None:
    # "shorter than 10 code points": 9 CJK characters (27 UTF-8 bytes) still take the edit-ratio step
    predicted, gold = "上海后天天气怎么样", "北京明天天气怎么样"
    assert _check({"s": STR}, _obj("s", predicted), _obj("s", gold)) == _edit(predicted, gold)


# "no `type` → str" holds for nested schemas that only carry `properties` or `items`, too


def test_schema_without_type_but_with_properties_is_a_string_schema() -> None:
    schema = {"properties": {"a": STR}}
    assert _check({"o": schema}, '{"o": {"a": "1"}}', '{"o": {"a": "1"}}') == TYPE_ERROR
    items = {"type": "array", "items": {"properties": {"a": STR}}}
    assert _check({"p": items}, '{"p": [{"a": "1"}]}', '{"p": [{"a": "1"}]}') == TYPE_ERROR
    assert _check({"p": items}, '{"p": ["s"]}', '{"p": ["s"]}') == "correct"


def test_empty_key_has_the_empty_path() -> None:
    # the path of a top-level key is `key`; for the key "" that is "", the root's path: plain wording and
    # no " at '...'" suffix
    assert _check({"": {"type": "integer"}}, '{"": "x"}', '{"": 1}') == "error_schema: args type inconsistent"
    assert _check({"": {"type": "integer"}}, '{"": 2}', '{"": 1}') == "error_match: value mismatch"


def test_list_of_type_names_with_an_unknown_name() -> None:
    # Ambiguous in the spec ("an unknown type name → no type check" vs "a list of type names → the
    # union"). Choice kept: the union of the Python types the known names map to (an unknown name adds
    # none), as a list-aware version of the reference's name-to-types lookup gives; only a list with no
    # known name at all does no type check.
    assert _check({"p": {"type": ["integer", "decimal"]}}, '{"p": "s"}', '{"p": "s"}') == TYPE_ERROR
    assert _check({"p": {"type": ["integer", "decimal"]}}, '{"p": 3}', '{"p": 3}') == "correct"
    assert _check({"p": {"type": ["decimal"]}}, '{"p": "s"}', '{"p": "s"}') == "correct"
