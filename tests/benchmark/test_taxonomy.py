"""The error taxonomy, rule by rule and precedence by precedence (paper-harness §3.2-3.3), the paper's
9-column merge, and the category written into score files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from wtb_local.benchmark.scoring import taxonomy as tx
from wtb_local.benchmark.scoring.taxonomy import classify_task, message_category

ASK, PREP = "ask_user_for_required_parameters", "prepare_to_answer"
TOOLS = {"f", "g", "h"}
VECTORS = Path(__file__).parents[1] / "fixtures" / "vectors" / "sessions"


def _call(name: str, args: str = "{}") -> dict[str, Any]:
    return {"id": "c", "type": "function", "function": {"name": name, "arguments": args}}


def _step(calls: list[str] | None = None, text: str | None = None, label: str = "correct",
          **extra: Any) -> dict[str, Any]:
    output: dict[str, Any] = {"reasoning_content": None, "content": text,
                              "tool_calls": [_call(n) for n in calls] if calls else None,
                              "current_action_name_label": label, **extra}
    return {"inference_input": {"messages": [], "tools": []}, "inference_output": output}


def _task(*steps: dict[str, Any], name_label: str = "error", args_label: str | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {"label": "error", "action_name_label": name_label}
    if args_label is not None:
        task["action_arguments_label"] = args_label
    task["inference_log"] = {"task_idx": 0, **{f"step_{i}": s for i, s in enumerate(steps)}}
    return task


def test_correct_task_has_no_category() -> None:
    task = _task(_step(["f"]), _step(text="done"), name_label="correct", args_label="correct")
    task["label"] = "correct"
    assert classify_task(task, ["f", PREP], TOOLS) is None


@pytest.mark.parametrize("step", [_step(text="I cannot help", label="error"), _step(text="", label="error"),
                                  _step(text=None, label="error", error_reason="parse error: bad json")])
def test_refusal_single_step_without_a_call(step: dict[str, Any]) -> None:
    assert classify_task(_task(step), ["f", PREP], TOOLS) == tx.REFUSAL


def test_refusal_beats_wrong_refusal_and_wrong_refusal_on_chat() -> None:
    # a chat task answered by a lone text step never fails, so a one-step failure there is a call
    assert classify_task(_task(_step(text="no", label="error")), [PREP], TOOLS) == tx.REFUSAL
    assert classify_task(_task(_step(["f"], label="error")), [PREP], TOOLS) == tx.WRONG_REFUSAL
    # wrong refusal comes before the walk, so even an unknown name on a chat task is a wrong refusal
    assert classify_task(_task(_step(["nope"], label="error")), [PREP], TOOLS) == tx.WRONG_REFUSAL


def test_wrong_name_beats_missing_info_and_redundancy() -> None:
    task = _task(_step(["f"]), _step(["zzz"], label="error"))
    assert classify_task(task, [ASK, "f", PREP], TOOLS) == tx.WRONG_NAME
    # a pseudo-action called as a tool is not an offered tool either
    assert classify_task(_task(_step(["f"]), _step([ASK], label="error")), ["f", "g", PREP], TOOLS) == \
        tx.WRONG_NAME


def test_missing_info_when_the_model_never_asked() -> None:
    task = _task(_step(["f"]), _step(["g"], label="error"))
    assert classify_task(task, [ASK, "f", PREP], TOOLS) == tx.MISSING_INFO


def test_redundant_call_more_calls_than_gold_nodes_minus_one() -> None:
    # [f, prepare]: f then f again = 2 calls > 1
    assert classify_task(_task(_step(["f"]), _step(["f"], label="error")), ["f", PREP], TOOLS) == \
        tx.REDUNDANT_CALL
    # the final failing text turn counts as a call too (a quirk of the script, kept)
    assert classify_task(_task(_step(["f"]), _step(text="", label="error")), ["f", PREP], TOOLS) == \
        tx.REDUNDANT_CALL


def test_redundant_call_only_extra_calls_of_gold_tools() -> None:
    # gold [f, g, h, prepare] (3 allowed): f, f, g -> extra f, every name is a gold tool
    task = _task(_step(["f", "f"], label="correct"), _step(["g"], label="error"))
    assert classify_task(task, ["f", "g", "h", PREP], TOOLS) == tx.REDUNDANT_CALL


def test_call_error_for_a_tool_or_a_text_turn_the_gold_lacks() -> None:
    task = _task(_step(["f"]), _step(["h"], label="error"))
    assert classify_task(task, ["f", "g", "g", PREP], TOOLS) == tx.CALL_ERROR
    # a premature text answer in a sequential task: its pseudo-name is not in the gold
    task = _task(_step(["f"]), _step(text="here you go", label="error"))
    assert classify_task(task, ["f", "g", "h", PREP], TOOLS) == tx.CALL_ERROR


def test_missing_info_from_the_difference_when_the_ask_is_counted_too_often() -> None:
    # gold asks twice; the model asked once (a text step) then called f: ask left over in the gold
    task = _task(_step(text="which?"), _step(["f"], label="error"))
    assert classify_task(task, [ASK, ASK, "f", "g", PREP], TOOLS) == tx.MISSING_INFO


def test_early_termination_gold_tools_in_the_wrong_grouping() -> None:
    # gold f, g (parallel or in order) then prepare; the model called g alone first
    task = _task(_step(["f", "g"], label="correct"), _step(["g"], label="error"))
    assert classify_task(task, ["f", "g", "g", "h", PREP], TOOLS) == tx.EARLY_TERMINATION


def test_run_errors_are_not_charged_to_the_model() -> None:
    failed = _step(text="", label="error", finish_reason="error", error_reason="prompt too long: 9 > 8")
    assert classify_task(_task(failed), ["f", PREP], TOOLS) == tx.RUN_ERROR
    rendered = _step(text="", label="error", error_reason="render failed: TemplateError: x")
    assert classify_task(_task(_step(["f"]), rendered), ["f", "g", PREP], TOOLS) == tx.RUN_ERROR
    assert classify_task("Error code: 400", ["f", PREP], TOOLS) == tx.RUN_ERROR


def _param_task(*results: list[str]) -> dict[str, Any]:
    steps = [_step(["f"], current_action_arguments_label="error" if any(r != "correct" for r in res) else
                   "correct", **({"current_action_arguments_check_result": res}
                                 if any(r != "correct" for r in res) else {})) for res in results]
    return _task(*steps, name_label="correct", args_label="error")


@pytest.mark.parametrize(
    ("message", "label"),
    [
        ("error_schema: required args missing", tx.MISSING_PARAM),
        ("error_schema: required nested args missing", tx.MISSING_PARAM),
        ("error_match: args keys mismatch (missing: ['a'])", tx.MISSING_PARAM),
        ("error_match: args keys mismatch (missing: ['a'], extra: ['b'])", tx.MISSING_PARAM),
        ("error_match: args keys mismatch (extra: ['b'])", tx.PARAM_HALLUCINATION),
        ("error_schema: args not defined", tx.PARAM_HALLUCINATION),
        ("error_schema: nested args not defined", tx.PARAM_HALLUCINATION),
        ("error_schema: nested args type inconsistent", tx.PARAM_TYPE_ERROR),
        ("error_schema: args type inconsistent", tx.PARAM_TYPE_ERROR),
        ("error_schema: nested args value not in enum", tx.PARAM_TYPE_ERROR),
        ("error_match: value type inconsistent at 'a'", tx.PARAM_TYPE_ERROR),
        ("error: args invalid json format", tx.PARAM_TYPE_ERROR),
        ("error_match: value mismatch at 'n'", tx.PARAM_VALUE_ERROR),
        ("error_match: string similarity too low (rouge score: 0.12) at 'q'", tx.PARAM_VALUE_ERROR),
        ("error_match: string similarity too low (edit score: 0.50) at 'q'", tx.PARAM_VALUE_ERROR),
        ("error_match: array length mismatch at 'xs'", tx.PARAM_VALUE_ERROR),
        ("error_match: rouge calculation failed at 'q'", tx.PARAM_VALUE_ERROR),
        ("error: comparison failed - boom", tx.PARAM_VALUE_ERROR),
        ("error_schema: tool not defined", tx.UNCLASSIFIED),
    ],
)
def test_checker_messages(message: str, label: str) -> None:
    assert message_category(message) == label
    assert classify_task(_param_task([message]), ["f", PREP], TOOLS) == label


def test_first_failing_call_of_the_first_failing_step() -> None:
    task = _param_task(["correct"], ["correct", "error_match: value mismatch at 'a'",
                                     "error_schema: args not defined"],
                       ["error_schema: required args missing"])
    assert classify_task(task, ["f", "f", "f", PREP], TOOLS) == tx.PARAM_VALUE_ERROR


def test_paper_layout_merges_two_pairs() -> None:
    assert tx.PAPER_COLUMNS["wrong_name_missing_info"] == (tx.WRONG_NAME, tx.MISSING_INFO)
    assert tx.PAPER_COLUMNS["param_value_error"] == (tx.PARAM_VALUE_ERROR, tx.MISSING_PARAM)
    counted = [label for labels in tx.PAPER_COLUMNS.values() for label in labels]
    assert sorted(counted) == sorted(set(tx.LABELS) - {tx.RUN_ERROR, tx.UNCLASSIFIED})
    from wtb_local.analysis.reports.paper import paper_rows

    assert [c for c in paper_rows(8)["Qwen3-8B"] if c != "group"] == list(tx.PAPER_COLUMNS)


def test_score_files_carry_the_category_after_the_reference_fields() -> None:
    from wtb_local.benchmark.scoring import score_results
    from wtb_local.contract.schema import Session

    rows = [json.loads(line) for line in (VECTORS / "result.jsonl").read_text(encoding="utf-8").splitlines()]
    sessions = [Session.model_validate(json.loads(line))
                for line in (VECTORS / "dataset.jsonl").read_text(encoding="utf-8").splitlines()]
    score_rows, _ = score_results(rows, sessions, "scripted")
    tasks = [task for row in score_rows for task in row["results"]]
    assert all(list(task)[-1] == "error_category" for task in tasks)
    assert all((task["error_category"] is None) == (task["label"] == "correct") for task in tasks)
    assert Counter(task["error_category"] for task in tasks) == Counter({
        None: 136, "Redundant Call": 46, "Param Value Error": 26, "Call Error": 14, "Refusal": 12,
        "Early Termination": 5, "Missing Param": 5, "Wrong Refusal": 4, "Param Hallucination": 3,
        "Wrong Name": 3, "Param Type Error": 2})


# --- one taxonomy, two scorers: what differs is the parameter record read and whether run errors exist ---------


def _lenient_task(errors: list[dict[str, Any]]) -> dict[str, Any]:
    """A lenient score entry whose action was right and whose arguments failed (§3.1 step 3)."""
    task = _task(_step(["f"]), _step(["g"]), _step(text="done"), name_label="correct", args_label="error")
    task["argument_errors"] = errors
    return task


@pytest.mark.parametrize(("case", "task", "gold", "release", "paper"), [
    # §1.1: a request the harness's server failed on came back as an empty answer: one text-less step
    ("an unserved lone step", _task(_step(text="", label="error", finish_reason="error",
                                          error_reason="prompt too long: 9 > 8")),
     ["f", PREP], tx.RUN_ERROR, tx.REFUSAL),
    # §3.2 A.3: the content-filter marker is a refusal, not a hallucinated name
    ("filter_by_prompt", _task(_step(["f"]), _step(["filter_by_prompt"], label="error")),
     ["f", "g", PREP], tx.REFUSAL, tx.REFUSAL),
    # §3.2 A.3: a label stops only its step; a later step's label replaces it
    ("a wrong name, then the marker", _task(_step(["zzz"]), _step(["filter_by_prompt"], label="error")),
     ["f", "g", PREP], tx.REFUSAL, tx.REFUSAL),
    ("the marker, then a wrong name", _task(_step(["filter_by_prompt"]), _step(["zzz"], label="error")),
     ["f", "g", PREP], tx.WRONG_NAME, tx.WRONG_NAME),
    # §3.2 A.3 c: text mid-sequence counts as an ask the gold lacks
    ("premature text", _task(_step(["f"]), _step(text="here", label="error")), ["f", "g", PREP],
     tx.CALL_ERROR, tx.CALL_ERROR),
])
def test_both_scorers_classify_action_errors_by_the_papers_rules(case: str, task: dict[str, Any], gold: list[str],
                                                                 release: str, paper: str) -> None:
    assert classify_task(task, gold, TOOLS, tx.RELEASE) == release
    assert classify_task(task, gold, TOOLS, tx.PAPER) == paper


@pytest.mark.parametrize(("errors", "label"), [
    # §3.2 B: the failing pair of the smallest step index, then miss > hallucination > type > value-halluc. > value
    ([{"idx": 1, "error_type": ["miss required params"]}, {"idx": 0, "error_type": ["param value error", "type error"]}],
     tx.PARAM_TYPE_ERROR),
    ([{"idx": 0, "error_type": ["param value error", "param value hallucination"]}], tx.PARAM_VALUE_HALLUCINATION),
    ([{"idx": 2, "error_type": ["param hallucination", "miss required params"]}], tx.MISSING_PARAM),
    ([{"idx": 0, "error_type": ["param value error"]}], tx.PARAM_VALUE_ERROR),
    ([], tx.UNCLASSIFIED),  # the harness asserts here (its pairing bug)
])
def test_the_paper_scorer_reads_the_lenient_checkers_record(errors: list[dict[str, Any]], label: str) -> None:
    task = _lenient_task(errors)
    assert classify_task(task, ["f", "g", PREP], TOOLS, tx.PAPER) == label
    # the strict reader looks for the strict checker's messages on the steps: there are none
    assert classify_task(task, ["f", "g", PREP], TOOLS, tx.RELEASE) == tx.UNCLASSIFIED


def test_the_harness_labels_are_the_taxonomys_in_the_scripts_order() -> None:
    from wtb_local.benchmark.protocols.harness_scoring import ERROR_TYPES

    assert ERROR_TYPES == tuple(tx.HARNESS_LABELS.values())
    assert list(tx.HARNESS_LABELS) == [label for label in tx.LABELS if label not in (tx.RUN_ERROR, tx.UNCLASSIFIED)]
    # §3.3: a hallucinated value goes with hallucinated parameters in the paper's columns (an inference)
    assert tx.PAPER_COLUMNS["param_hallucination"] == (tx.PARAM_HALLUCINATION, tx.PARAM_VALUE_HALLUCINATION)


def test_report_counts_a_paper_runs_categories_as_its_scorer_did(tmp_path: Path) -> None:
    """A --protocol paper run: `report`'s every-label section equals the harness's own counts in the run's
    metric file (`error_type_info`), not the release rules applied to lenient verdicts."""
    import csv

    from click.testing import CliRunner

    from tests.run.conftest import invoke, scripted_args
    from wtb_local.cli import cli

    assert invoke(scripted_args(tmp_path / "paper", "--protocol", "paper")).exit_code == 0
    metric = json.loads((tmp_path / "paper" / "score" / "scripted" / "Wild-Tool-Bench_metric.json").read_text())
    counts = {label: metric["error_type_info"][name]["count"] for label, name in tx.HARNESS_LABELS.items()}
    failed = metric["total_info"]["task"]["total_count"] - metric["total_info"]["task"]["correct_count"]
    assert sum(counts.values()) == failed and counts[tx.PARAM_VALUE_ERROR] > 0
    done = CliRunner().invoke(cli, ["report", str(tmp_path / "paper"), "--out", str(tmp_path / "r"), "--format", "csv"])
    assert done.exit_code == 0, done.output
    with (tmp_path / "r" / "errors.csv").open(encoding="utf-8") as handle:
        row = next(csv.DictReader(handle))
    assert row["model"] == "scripted [paper-lenient]" and int(row["failed"]) == failed
    assert {label: round(float(row[label] or 0) * failed / 100) for label in counts} == counts
