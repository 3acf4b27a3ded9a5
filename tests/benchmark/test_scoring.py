"""Scoring result rows reproduces the reference's score rows and metric; file I/O and bad input."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path

import pytest

from wtb_local.benchmark.evaluator.judge import score_session, score_task
from wtb_local.benchmark.scoring import (
    ScoringError,
    append_result_row,
    read_metric,
    read_result_rows,
    score_file,
    score_results,
    write_result_rows,
    write_score_files,
)
from wtb_local.contract.schema import Session

VECTORS = Path(__file__).parents[1] / "fixtures" / "vectors" / "sessions"


def _rows(name: str) -> list[dict]:
    return [
        json.loads(line) for line in (VECTORS / name).read_text(encoding="utf-8").splitlines() if line.strip()
    ]


@cache
def _sessions() -> tuple[Session, ...]:
    return tuple(Session.model_validate(row) for row in _rows("dataset.jsonl"))


def test_score_rows_equal_the_reference_byte_for_byte_in_content() -> None:
    results, expected = _rows("result.jsonl"), _rows("score.jsonl")
    got = [score_session(row) for row in results]
    assert len(got) == len(expected) == 64
    for ours, theirs in zip(got, expected, strict=True):
        # same content and the same key order (label first, action_arguments_label after the name label)
        assert json.dumps(ours, ensure_ascii=False) == json.dumps(theirs, ensure_ascii=False)


def test_labels_and_steps_kept_match_the_reference() -> None:
    got = {row["id"]: row for row in (score_session(r) for r in _rows("result.jsonl"))}
    checked = 0
    for theirs in _rows("score.jsonl"):
        for ours_task, their_task in zip(got[theirs["id"]]["results"], theirs["results"], strict=True):
            for key in ("label", "action_name_label", "is_optimal"):
                assert ours_task[key] == their_task[key]
            assert ("action_arguments_label" in ours_task) == ("action_arguments_label" in their_task)
            assert ours_task.get("action_arguments_label") == their_task.get("action_arguments_label")
            assert list(ours_task["inference_log"]) == list(their_task["inference_log"])
            for step, data in their_task["inference_log"].items():
                if step.startswith("step_"):
                    output = ours_task["inference_log"][step]["inference_output"]
                    assert output.get("current_action_arguments_label") == data["inference_output"].get(
                        "current_action_arguments_label"
                    )
                    checked += 1
    assert checked > 500


def test_metric_equals_the_reference_including_key_order() -> None:
    score_rows, metric = score_results(_rows("result.jsonl"), _sessions(), "scripted")
    expected = json.loads((VECTORS / "metric.json").read_text(encoding="utf-8"))
    assert metric == expected
    assert json.dumps(metric) == json.dumps(expected)
    assert [row["id"] for row in score_rows] == [f"wild_tool_bench_{i}" for i in range(64)]


def test_input_rows_are_not_modified_and_rows_are_sorted_by_numeric_id() -> None:
    results = _rows("result.jsonl")
    shuffled = [results[10], results[2], results[1]]
    before = copy.deepcopy(shuffled)
    score_rows, _ = score_results(shuffled, _sessions(), "m")
    assert shuffled == before
    assert [row["id"] for row in score_rows] == [
        "wild_tool_bench_1",
        "wild_tool_bench_2",
        "wild_tool_bench_10",
    ]


# --- the walk on hand-made tasks -------------------------------------------------------------------------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
    }
]


def _tool_step(predicted: object, gold: str = '{"q": "alpha"}') -> dict:
    return {
        "inference_input": {"messages": [], "tools": TOOLS},
        "inference_output": {
            "reasoning_content": None,
            "content": "",
            "tool_calls": [
                {"id": "c0", "type": "function", "function": {"name": "get", "arguments": predicted}}
            ],
            "current_action_name_label": "correct",
        },
        "inference_answer": {
            "candidate_0_answer_function_list": {"action": [{"arguments": gold, "name": "get"}]}
        },
    }


def _prepare_step() -> dict:
    return {
        "inference_input": {"messages": [], "tools": TOOLS},
        "inference_output": {
            "reasoning_content": None,
            "content": "done",
            "tool_calls": None,
            "current_action_name_label": "correct",
        },
        "inference_answer": {
            "candidate_0_answer_function_list": {
                "action": [{"arguments": '{"answer_type": "tool"}', "name": "prepare_to_answer"}],
                "observation": "ok",
            }
        },
    }


def _task(*steps: dict, name_label: str = "correct", optimal: bool = True) -> dict:
    log: dict = {"task_idx": 0, "begin_of_current_task": {"role": "user", "content": "hi"}}
    log.update({f"step_{i}": step for i, step in enumerate(steps)})
    return {
        "action_name_label": name_label,
        "is_optimal": optimal,
        "inference_log": log,
        "latency": [],
        "input_token_count": [],
        "output_token_count": [],
    }


def test_argument_error_deletes_the_next_step_and_rewrites_the_name_label() -> None:
    failing_step = _tool_step('{"q": "zzz"}')
    last_step = _prepare_step()
    last_step["inference_output"]["current_action_name_label"] = "error"
    task = _task(failing_step, _tool_step('{"q": "alpha"}'), last_step, name_label="error")
    scored = score_task(task)
    assert list(scored)[:3] == ["label", "action_name_label", "action_arguments_label"]
    assert scored["label"] == "error"
    assert scored["action_name_label"] == "correct"
    assert scored["action_arguments_label"] == "error"
    assert scored["is_optimal"] is False
    steps = [k for k in scored["inference_log"] if k.startswith("step_")]
    assert steps == ["step_0", "step_2"]  # only the step right after the failure is deleted
    output = scored["inference_log"]["step_0"]["inference_output"]
    assert output["current_action_arguments_label"] == "error"
    assert output["current_action_arguments_check_result"][0].startswith("error_match: string similarity")


def test_correct_task_gets_both_labels_and_keeps_optimal() -> None:
    scored = score_task(_task(_tool_step('{"q": "alpha"}'), _prepare_step()))
    assert (scored["label"], scored["action_name_label"], scored["action_arguments_label"]) == (
        "correct",
    ) * 3
    assert scored["is_optimal"] is True
    assert "current_action_arguments_label" not in scored["inference_log"]["step_1"]["inference_output"]


def test_failing_last_step_keeps_the_name_label() -> None:
    # Nothing follows the failing step: nothing is deleted and the name label is not rewritten.
    scored = score_task(_task(_tool_step('{"q": "zzz"}'), name_label="error", optimal=False))
    assert scored["label"] == "error"
    assert scored["action_name_label"] == "error"
    assert "action_arguments_label" not in scored


def test_name_error_step_stops_the_walk_and_gets_an_empty_candidate() -> None:
    empty = {
        "inference_input": {"messages": [], "tools": TOOLS},
        "inference_output": {
            "reasoning_content": None,
            "content": "",
            "tool_calls": None,
            "current_action_name_label": "error",
            "error_reason": "tool_calls and content are None or empty",
        },
    }
    scored = score_task(_task(_tool_step('{"q": "alpha"}'), empty, name_label="error", optimal=False))
    assert scored["label"] == "error" and "action_arguments_label" not in scored
    assert scored["inference_log"]["step_1"]["inference_answer"] == {
        "candidate_0_answer_function_list": {"action": []}
    }


def test_arguments_given_as_objects_are_scored() -> None:
    scored = score_task(_task(_tool_step({"q": "alpha"}), _prepare_step()))
    assert scored["label"] == "correct"
    call = scored["inference_log"]["step_0"]["inference_output"]["tool_calls"][0]
    assert call["function"]["arguments"] == '{"q": "alpha"}'
    scored = score_task(_task(_tool_step(None), _prepare_step()))
    assert scored["action_arguments_label"] == "error"


def test_parallel_calls_are_paired_by_sorted_text_and_written_back_sorted() -> None:
    step = _tool_step('{"q": "beta"}')
    step["inference_output"]["tool_calls"].append(
        {"id": "c1", "type": "function", "function": {"name": "get", "arguments": '{"q": "alpha"}'}}
    )
    step["inference_answer"]["candidate_0_answer_function_list"]["action"] = [
        {"arguments": '{"q": "beta"}', "name": "get"},
        {"arguments": '{"q": "alpha"}', "name": "get"},
    ]
    scored = score_task(_task(step, _prepare_step()))
    assert scored["label"] == "correct"
    out = scored["inference_log"]["step_0"]
    assert [c["id"] for c in out["inference_output"]["tool_calls"]] == ["c1", "c0"]
    assert [
        a["arguments"] for a in out["inference_answer"]["candidate_0_answer_function_list"]["action"]
    ] == ['{"q": "alpha"}', '{"q": "beta"}']


def test_error_string_session_counts_every_task_as_failed() -> None:
    results = _rows("result.jsonl")[:2]
    results[1] = {"id": results[1]["id"], "model_name": "m", "result": "Error code: 400 - context too long"}
    score_rows, metric = score_results(results, _sessions(), "m")
    assert score_rows[1]["results"] == "Error code: 400 - context too long"
    assert metric["total_info"]["task"]["total_count"] == 8
    assert metric["total_info"]["session"]["total_count"] == 2
    first = score_results(results[:1], _sessions(), "m")[1]
    assert metric["total_info"]["task"]["correct_count"] == first["total_info"]["task"]["correct_count"]
    assert metric["total_info"]["session"]["correct_count"] == first["total_info"]["session"]["correct_count"]


# --- files ---------------------------------------------------------------------------------------------------


def test_result_rows_round_trip_with_non_ascii(tmp_path: Path) -> None:
    rows = [{"id": "wild_tool_bench_0", "model_name": "m", "result": "北京 — error"}]
    path = write_result_rows(tmp_path / "r" / "res.jsonl", rows)
    assert "北京" in path.read_text(encoding="utf-8")
    append_result_row(path, {"id": "wild_tool_bench_1", "model_name": "m", "result": "x"})
    assert read_result_rows(path) == [*rows, {"id": "wild_tool_bench_1", "model_name": "m", "result": "x"}]


def test_score_files_layout_and_reread(tmp_path: Path) -> None:
    score_rows, metric = score_results(_rows("result.jsonl"), _sessions(), "org/model")
    score_path, metric_path = write_score_files(tmp_path, "org/model", score_rows, metric)
    assert score_path == tmp_path / "score" / "org_model" / "Wild-Tool-Bench_score.jsonl"
    assert metric_path == tmp_path / "score" / "org_model" / "Wild-Tool-Bench_metric.json"
    assert metric_path.read_text(encoding="utf-8") == json.dumps(metric, indent=4, ensure_ascii=False) + "\n"
    assert metric["model_name"] == "org_model"
    assert read_metric(tmp_path) == metric
    # the written score file re-reads to the same metric
    again = score_file(score_path, _sessions(), "org/model")
    assert again.already_scored and again.metric == metric and again.score_rows == score_rows


def _write(tmp_path: Path, rows: list, name: str = "res.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def _bad_cases() -> list[tuple[str, object, str]]:
    good = _rows("result.jsonl")[:2]
    missing_field = copy.deepcopy(good)
    del missing_field[1]["result"][2]["inference_log"]
    missing_step_field = copy.deepcopy(good)
    del missing_step_field[0]["result"][0]["inference_log"]["step_0"]["inference_output"][
        "current_action_name_label"
    ]
    unknown_id = copy.deepcopy(good)
    unknown_id[1]["id"] = "wild_tool_bench_999"
    fewer = copy.deepcopy(good)
    fewer[1]["result"] = fewer[1]["result"][:3]
    duplicate = [good[0], good[0]]
    no_id = copy.deepcopy(good)
    del no_id[1]["id"]
    bad_id = copy.deepcopy(good)
    bad_id[0]["id"] = "session-zero"
    return [
        ("malformed", [json.dumps(good[0]), "{not json", json.dumps(good[1])], ":2: not JSON (found "),
        ("not_object", [json.dumps(good[0]), "[1, 2]"], ":2: a JSON list, not an object (found "),
        ("missing_field", missing_field, ":2: wild_tool_bench_1: result[2].inference_log: missing"),
        (
            "missing_step_field",
            missing_step_field,
            ":1: wild_tool_bench_0: result[0].inference_log.step_0.inference_output.current_action_name_label: missing",
        ),
        ("unknown_id", unknown_id, ":2: id: wild_tool_bench_999 is not in the dataset (64 sessions)"),
        ("fewer_tasks", fewer, ":2: wild_tool_bench_1: result: 3 tasks, the dataset has 4"),
        ("duplicate", duplicate, ":2: id: wild_tool_bench_0 repeats line 1"),
        ("no_id", no_id, ":2: not a session row (found "),
        ("bad_id", bad_id, ":1: id: session id 'session-zero' is not of the form"),
        ("empty", [], "no rows (empty file)"),
    ]


@pytest.mark.parametrize(("case", "rows", "message"), _bad_cases(), ids=[c[0] for c in _bad_cases()])
def test_bad_result_files_give_one_line_errors(tmp_path: Path, case: str, rows: list, message: str) -> None:
    path = _write(tmp_path, rows)
    with pytest.raises(ScoringError) as error:
        score_file(path, _sessions(), "m")
    text = str(error.value)
    assert "\n" not in text
    assert text.startswith(str(path))
    assert message in text


def test_missing_file_is_a_scoring_error(tmp_path: Path) -> None:
    with pytest.raises(ScoringError, match="cannot read"):
        read_result_rows(tmp_path / "absent.jsonl")
    with pytest.raises(ScoringError, match="no Wild-Tool-Bench_metric.json"):
        read_metric(tmp_path)
