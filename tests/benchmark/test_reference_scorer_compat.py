"""Result files written by wtb_local have what the benchmark's reference scorer reads (docs/evaluation.md §7).

The reference scorer reads every session line with `json.loads`, walks each task's `step_<k>` entries in
file order, reads `inference_answer` at every step it reaches (KeyError otherwise), asserts that an
accepted step lists exactly one candidate whose action list matches the predicted calls one for one by
name (after sorting both by (name, arguments)), looks the called tool up in the step's tools (KeyError
otherwise), `json.loads` the argument texts, and indexes the dataset by the numeric id suffix with fixed
task-type, turn-subtype and layer tables. These structural checks pin that contract on real runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from wtb_local.contract.resources import sample_dataset_path

VECTORS = Path(__file__).resolve().parents[1] / "fixtures" / "vectors" / "sessions"
RESULT_NAME = "Wild-Tool-Bench_result.jsonl"
PSEUDO = ("prepare_to_answer", "ask_user_for_required_parameters")
# The reference metric's fixed tables: any other value is a KeyError there.
TASK_TYPES = {"Single-Tool", "Parallel Multi-Tool", "Sequential Multi-Tool", "Mixed Multi-Tool", "Clarify", "Chat"}
TURN_SUBTYPES = {"Coreferential Reference", "Partial Information", "Long-Range Dependency"}
MAX_TASKS = 4


def _run(args: list[str]) -> None:
    from wtb_local.cli import cli

    outcome = CliRunner().invoke(cli, ["run", *args, "--progress", "none"], catch_exceptions=False)
    assert outcome.exit_code == 0, outcome.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, Path]]:
    """(result file, dataset file) of an oracle run on the sample and a scripted run on the vectors (whose
    replies include empty replies, unreadable calls, wrong names and argument errors)."""
    base = tmp_path_factory.mktemp("refcompat")
    _run(["--backend", "oracle", "--model", "Qwen/Qwen3-8B", "--dataset", "sample", "--out", str(base / "o")])
    _run(["--backend", "scripted", "--script", str(VECTORS / "script.jsonl"), "--dataset",
          str(VECTORS / "dataset.jsonl"), "--model", "scripted", "--out", str(base / "s")])
    return [
        (base / "o" / "result" / "Qwen_Qwen3-8B" / RESULT_NAME, sample_dataset_path()),
        (base / "s" / "result" / "scripted" / RESULT_NAME, VECTORS / "dataset.jsonl"),
    ]


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _steps(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for key, step in task["inference_log"].items() if key.startswith("step_")]


def test_every_line_is_one_session_object(runs: list[tuple[Path, Path]]) -> None:
    for result_file, _ in runs:
        text = result_file.read_text(encoding="utf-8")
        assert text.endswith("\n") and "\n\n" not in text  # load_file json.loads every line, blank ones too
        rows = _rows(result_file)
        ids = [row["id"] for row in rows]
        assert len(set(ids)) == len(ids)
        for row in rows:
            assert int(row["id"].rsplit("_", 1)[1]) >= 0  # sort_key and the metric's dataset index
            assert isinstance(row["result"], list) and row["result"]


def test_every_step_has_what_the_reference_reads(runs: list[tuple[Path, Path]]) -> None:
    empty_candidates = 0
    for result_file, _ in runs:
        for row in _rows(result_file):
            for task in row["result"]:
                assert list(task)[:3] == ["action_name_label", "is_optimal", "inference_log"]
                assert task["action_name_label"] in ("correct", "error") and isinstance(task["is_optimal"], bool)
                log = task["inference_log"]
                keys = [k for k in log if k.startswith("step_")]
                # the reference walks the steps in file order: they must be step_0, step_1, ... in order
                assert keys == [f"step_{i}" for i in range(len(keys))] and keys
                for step in _steps(task):
                    assert isinstance(step["inference_input"]["tools"], list)
                    output = step["inference_output"]
                    assert output["current_action_name_label"] in ("correct", "error")
                    actions = step["inference_answer"]["candidate_0_answer_function_list"]["action"]
                    assert all(isinstance(a["name"], str) and isinstance(a["arguments"], str) for a in actions)
                    empty_candidates += not actions
    assert empty_candidates  # the scripted replies include steps with nothing to compare


def test_accepted_steps_pass_the_reference_asserts(runs: list[tuple[Path, Path]]) -> None:
    checked = 0
    for result_file, _ in runs:
        for row in _rows(result_file):
            for task in row["result"]:
                for step in _steps(task):
                    output, answer = step["inference_output"], step["inference_answer"]
                    if output["current_action_name_label"] == "error":
                        break  # the reference stops reading a task at its first error step
                    assert list(answer) == ["candidate_0_answer_function_list"]
                    actions = answer["candidate_0_answer_function_list"]["action"]
                    assert actions  # actions[0] is read
                    if actions[0]["name"] in PSEUDO:
                        continue
                    calls = output["tool_calls"]
                    assert isinstance(calls, list) and len(calls) == len(actions)
                    by_call = sorted(calls, key=lambda c: (c["function"]["name"], c["function"]["arguments"]))
                    by_gold = sorted(actions, key=lambda a: (a["name"], a["arguments"]))
                    tools = {t.get("function", {}).get("name") for t in step["inference_input"]["tools"]}
                    for call, gold in zip(by_call, by_gold, strict=True):
                        assert call["function"]["name"] == gold["name"] and gold["name"] in tools
                        assert isinstance(call["function"]["arguments"], str)
                    checked += 1
    assert checked


def test_the_reference_metric_can_index_the_dataset(runs: list[tuple[Path, Path]]) -> None:
    for result_file, dataset_file in runs:
        dataset = _rows(dataset_file)
        for row in _rows(result_file):
            entry = dataset[int(row["id"].rsplit("_", 1)[1])]
            assert entry["id"] == row["id"]
            n_tasks = len(row["result"])
            assert n_tasks <= MAX_TASKS and n_tasks <= len(entry["english_task_types"])
            assert set(entry["english_task_types"][:n_tasks]) <= TASK_TYPES
            assert set(entry["english_turn_subtypes"][: n_tasks - 1]) <= TURN_SUBTYPES
            assert len(entry["answer_list"]) >= n_tasks  # the progress rate's total_step
