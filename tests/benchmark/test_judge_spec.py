"""The argument-scoring walk (docs/evaluation.md §5) and the progress count it feeds (§6), on hand-made
result entries; every expected value comes from the sentence of docs/evaluation.md quoted above the test."""

from __future__ import annotations

import copy
import json

from wtb_local.benchmark.evaluator.judge import score_session, score_task
from wtb_local.benchmark.evaluator.metrics import compute_metrics
from wtb_local.contract.schema import Session

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": "d",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
    }
    for name in ("f", "g")
]
ASK = "ask_user_for_required_parameters"
PREPARE = "prepare_to_answer"


def _call(name: str, arguments: object, call_id: str = "c") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _gold(name: str, arguments: dict) -> dict:
    return {"arguments": json.dumps(arguments, ensure_ascii=False), "name": name}


def _step(calls: list[dict] | None, gold: list[dict], label: str = "correct", content: str = "") -> dict:
    return {
        "inference_input": {"messages": [], "tools": TOOLS},
        "inference_output": {
            "reasoning_content": None,
            "content": content,
            "tool_calls": calls,
            "current_action_name_label": label,
        },
        "inference_answer": {"candidate_0_answer_function_list": {"action": gold}},
    }


def _task(*steps: dict, name_label: str = "correct", optimal: bool = True) -> dict:
    log: dict = {"task_idx": 0, "begin_of_current_task": {}}
    log.update({f"step_{k}": step for k, step in enumerate(steps)})
    return {
        "action_name_label": name_label,
        "is_optimal": optimal,
        "inference_log": log,
        "latency": [],
        "input_token_count": [],
        "output_token_count": [],
    }


def _output(scored: dict, step: int) -> dict:
    return scored["inference_log"][f"step_{step}"]["inference_output"]


OK_F = _step([_call("f", '{"q": "a"}')], [_gold("f", {"q": "a"})])
BAD_F = _step([_call("f", '{"q": "zzz"}')], [_gold("f", {"q": "a"})])
PREPARE_STEP = _step(None, [_gold(PREPARE, {"answer_type": "tool"})], content="done")


# "pseudo-action steps are skipped"


def test_pseudo_action_steps_are_skipped() -> None:
    ask = _step(None, [{**_gold(ASK, {}), "observation": "which?"}], content="which city?")
    scored = score_task(_task(ask, OK_F, PREPARE_STEP))
    assert "current_action_arguments_label" not in _output(scored, 0)
    assert "current_action_arguments_label" not in _output(scored, 2)
    assert _output(scored, 1)["current_action_arguments_label"] == "correct"
    assert scored["label"] == "correct"


def test_ask_accepted_as_a_tool_call_is_still_a_pseudo_action_step() -> None:
    # docs/evaluation.md §4: a tool call named like a pseudo-action is accepted by name; its "arguments" are
    # never checked (the tools do not even define it, which would otherwise be "tool not defined")
    ask_call = _step([_call(ASK, '{"anything": 1}')], [_gold(ASK, {})])
    scored = score_task(_task(ask_call, OK_F, PREPARE_STEP))
    assert "current_action_arguments_label" not in _output(scored, 0)
    assert scored["action_arguments_label"] == "correct"
    assert scored["label"] == "correct"


# "sort the predicted calls by `(name, arguments text)` and the accepted candidate's gold calls by
# `(name, gold text)` ... compare pairwise with `check` ... Pairing is by that sort only"


def test_calls_and_gold_are_sorted_and_written_back() -> None:
    step = _step(
        [_call("g", '{"q": "x"}', "1"), _call("f", '{"q": "b"}', "2"), _call("f", '{"q": "a"}', "3")],
        [_gold("f", {"q": "b"}), _gold("g", {"q": "x"}), _gold("f", {"q": "a"})],
    )
    scored = score_task(_task(step, PREPARE_STEP))
    output = _output(scored, 0)
    assert [c["id"] for c in output["tool_calls"]] == ["3", "2", "1"]
    gold = scored["inference_log"]["step_0"]["inference_answer"]["candidate_0_answer_function_list"]["action"]
    assert [(a["name"], a["arguments"]) for a in gold] == [
        ("f", '{"q": "a"}'),
        ("f", '{"q": "b"}'),
        ("g", '{"q": "x"}'),
    ]
    assert output["current_action_arguments_label"] == "correct"
    assert "current_action_arguments_check_result" not in output


def test_pairing_is_by_text_sort_only() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "w",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
                },
            },
        }
    ]
    # right calls, but the key order of the first makes it sort after the second: the pairs cross
    step = _step(
        [_call("w", '{"n": 1, "city": "Paris"}'), _call("w", '{"city": "Rome", "n": 2}')],
        [_gold("w", {"city": "Paris", "n": 1}), _gold("w", {"city": "Rome", "n": 2})],
    )
    step["inference_input"]["tools"] = tools
    scored = score_task(_task(step, PREPARE_STEP))
    output = _output(scored, 0)
    assert output["current_action_arguments_label"] == "error"
    # "`current_action_arguments_check_result` lists every pair's result": Rome vs Paris, Paris vs Rome
    results = output["current_action_arguments_check_result"]
    assert len(results) == 2
    assert all(r.startswith("error_match: ") and "at 'city'" in r for r in results)
    assert scored["label"] == "error"


def test_check_result_lists_correct_pairs_too() -> None:
    step = _step(
        [_call("f", '{"q": "a"}'), _call("g", '{"q": "zzz"}')],
        [_gold("f", {"q": "a"}), _gold("g", {"q": "x"})],
    )
    output = _output(score_task(_task(step, PREPARE_STEP)), 0)
    assert output["current_action_arguments_check_result"] == [
        "correct",
        "error_match: string similarity too low at 'q' (edit score: 0.00)",
    ]


# "first **[defined here]** serialize any predicted `arguments` that is not text with
# `json.dumps(value, ensure_ascii=False)` ... then sort"


def test_arguments_that_are_not_text_are_serialized_before_sorting() -> None:
    # ensure_ascii=False puts '{"q": "é"}' after '{"q": "b"}'; ASCII escapes would put it first and
    # cross the pairs
    step = _step(
        [_call("f", {"q": "é"}), _call("f", '{"q": "b"}')],
        [_gold("f", {"q": "b"}), _gold("f", {"q": "é"})],
    )
    output = _output(score_task(_task(step, PREPARE_STEP)), 0)
    assert output["current_action_arguments_label"] == "correct"
    assert [c["function"]["arguments"] for c in output["tool_calls"]] == ['{"q": "b"}', '{"q": "é"}']


def test_null_or_number_arguments_fail_the_root_type_check() -> None:
    for arguments in (None, 5, ["a"]):
        step = _step([_call("f", arguments)], [_gold("f", {"q": "a"})])
        output = _output(score_task(_task(step, PREPARE_STEP)), 0)
        assert output["current_action_arguments_check_result"] == ["error_schema: args type inconsistent"]


# "a step whose `current_action_name_label` is `error` ends the walk"


def test_error_step_ends_the_walk() -> None:
    wrong_name = _step([_call("g", '{"q": "zzz"}')], [_gold("f", {"q": "a"})], label="error")
    scored = score_task(_task(OK_F, wrong_name, name_label="error", optimal=False))
    assert _output(scored, 0)["current_action_arguments_label"] == "correct"
    assert "current_action_arguments_label" not in _output(scored, 1)
    # "`action_arguments_label` ... is written only for tasks whose `action_name_label` is `correct`"
    assert "action_arguments_label" not in scored
    assert scored["label"] == "error"
    assert list(scored["inference_log"]) == ["task_idx", "begin_of_current_task", "step_0", "step_1"]


# "after the first failing step, the **next** step entry (if any) is deleted from the log and the walk
# stops, and the task's `action_name_label` is set to `correct`"
# "`action_arguments_label` is `correct` unless a step failed; it is written ... right after it. A task's
# `label` is `correct` only when both labels are correct. An argument failure also clears `is_optimal`."


def test_failing_step_deletes_only_the_next_step() -> None:
    scored = score_task(_task(BAD_F, OK_F, PREPARE_STEP))
    assert list(scored["inference_log"]) == ["task_idx", "begin_of_current_task", "step_0", "step_2"]
    assert _output(scored, 0)["current_action_arguments_label"] == "error"
    assert scored["action_name_label"] == "correct"
    assert scored["action_arguments_label"] == "error"
    assert scored["is_optimal"] is False
    assert scored["label"] == "error"
    assert list(scored)[:3] == ["label", "action_name_label", "action_arguments_label"]


def test_failing_step_followed_by_a_name_error_rewrites_the_name_label() -> None:
    wrong_name = _step([_call("g", '{"q": "a"}')], [_gold("f", {"q": "a"})], label="error")
    scored = score_task(_task(BAD_F, wrong_name, name_label="error", optimal=False))
    assert list(scored["inference_log"]) == ["task_idx", "begin_of_current_task", "step_0"]
    assert scored["action_name_label"] == "correct"
    assert scored["action_arguments_label"] == "error"
    assert scored["label"] == "error"


def test_failing_last_step_deletes_nothing() -> None:
    scored = score_task(_task(OK_F, BAD_F, name_label="error", optimal=False))
    assert list(scored["inference_log"]) == ["task_idx", "begin_of_current_task", "step_0", "step_1"]
    assert scored["action_name_label"] == "error"
    assert "action_arguments_label" not in scored
    assert scored["label"] == "error"


def test_second_failing_step_is_never_reached() -> None:
    scored = score_task(_task(BAD_F, BAD_F, BAD_F, PREPARE_STEP))
    assert "step_1" not in scored["inference_log"]
    assert "current_action_arguments_label" not in _output(scored, 2)


def test_correct_task_keeps_its_flags_and_key_order() -> None:
    task = _task(OK_F, PREPARE_STEP)
    before = copy.deepcopy(task)
    scored = score_task(task)
    assert task == before  # the input is not modified
    assert list(scored) == [
        "label",
        "action_name_label",
        "action_arguments_label",
        "is_optimal",
        "inference_log",
        "latency",
        "input_token_count",
        "output_token_count",
    ]
    assert (scored["label"], scored["action_arguments_label"], scored["is_optimal"]) == (
        "correct",
        "correct",
        True,
    )


# docs/evaluation.md §7: "including sessions whose `result` is an error string, each of whose tasks counts as
# failed" docs/evaluation.md §6: "`complete_step` adds the number of `step_<k>` entries left in the scored log
# (error steps count; e.g. an argument error at step 0 of a 3-step task deletes `step_1`, leaving 2),
# `total_step` adds the number of gold nodes of the task"


def _session(index: int, types: list[str], node_counts: list[int]) -> Session:
    call = {"action": {"name": "f", "arguments": {"q": "a"}}, "observation": "x"}
    prepare = {"action": {"name": PREPARE, "arguments": {"answer_type": "tool"}}, "observation": "ok"}
    return Session.model_validate(
        {
            "id": f"wild_tool_bench_{index}",
            "english_env_info": "2025-01-01",
            "english_tools": TOOLS,
            "english_tasks": ["t"] * len(types),
            "english_answer_list": [[call] * (n - 1) + [prepare] for n in node_counts],
            "english_task_types": types,
            "english_turn_subtypes": ["Coreferential Reference"] * (len(types) - 1),
        }
    )


def test_progress_counts_steps_left_after_the_deletion() -> None:
    sessions = [
        _session(0, ["Sequential Multi-Tool", "Mixed Multi-Tool"], [3, 3]),
        _session(1, ["Chat"], [1]),
    ]
    rows = [
        {
            "id": "wild_tool_bench_0",
            "model_name": "m",
            "result": [
                _task(BAD_F, OK_F, PREPARE_STEP),  # step_1 deleted: 2 of 3
                _task(OK_F, OK_F, PREPARE_STEP, optimal=True),  # 3 of 3
            ],
        },
        {"id": "wild_tool_bench_1", "model_name": "m", "result": "Error: session crashed"},
    ]
    scored = [score_session(row) for row in rows]
    assert scored[1] == {"id": "wild_tool_bench_1", "results": "Error: session crashed"}
    metric = compute_metrics(scored, sessions, "m")
    assert metric["progress_info"]["Sequential Multi-Tool"] == {
        "rate": 2 / 3,
        "complete_step": 2,
        "total_step": 3,
    }
    assert metric["progress_info"]["Mixed Multi-Tool"] == {"rate": 1.0, "complete_step": 3, "total_step": 3}
    assert metric["progress_info"]["Total"] == {"rate": 5 / 6, "complete_step": 5, "total_step": 6}
    assert metric["total_info"]["task"] == {"accuracy": 1 / 3, "correct_count": 1, "total_count": 3}
    assert metric["total_info"]["session"] == {"accuracy": 0.0, "correct_count": 0, "total_count": 2}
    assert metric["task_type_info"]["Chat"] == {"accuracy": 0.0, "correct_count": 0, "total_count": 1}
    assert metric["optimal_info"]["Mixed Multi-Tool"] == {
        "accuracy": 1.0,
        "correct_count": 1,
        "total_count": 1,
    }


# docs/evaluation.md §7: "A step that had no candidates to compare (empty reply, unparsable calls, step beyond
# the nodes) gets `"inference_answer": {"candidate_0_answer_function_list": {"action": []}}`";
# docs/evaluation.md §5: such an error step ends the walk


def test_error_step_without_candidates_gets_an_empty_one_and_ends_the_walk() -> None:
    empty = _step(None, [], label="error")
    del empty["inference_answer"]
    scored = score_task(_task(OK_F, empty, name_label="error", optimal=False))
    assert scored["inference_log"]["step_1"]["inference_answer"] == {
        "candidate_0_answer_function_list": {"action": []}
    }
    assert "current_action_arguments_label" not in _output(scored, 1)
    assert scored["label"] == "error"
