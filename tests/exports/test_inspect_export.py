"""`export --to inspect`: the log inspect_ai's own reader reads back holds the run's counts, verdicts,
conversations, completions and Table 6/7 figures exactly (docs/exports.md). Needs the export extra; skipped
without inspect_ai only outside CI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.exports.runs import VECTORS, older_manifest_run, oracle_demo, recorded_run, wtb

pytestmark = pytest.mark.export
if os.environ.get("WTB_REQUIRE_EXPORT", "") != "1":  # set by the export stage of .ci/run
    pytest.importorskip("inspect_ai", reason="the export extra is not installed (pip install -e '.[export]')")


def _export(runs: list[str], out: Path, cwd: Path, extra: list[str] | None = None) -> list[Path]:
    done = wtb(["export", *runs, *(extra or []), "--to", "inspect", str(out)], cwd)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(runs)
    # each run names what an Inspect log cannot hold, on stderr
    assert [line.split(": ")[0] for line in done.stderr.splitlines()] == ["not carried"] * len(runs)
    return [Path(line.rsplit(": ", 1)[1]) for line in lines]


def test_a_recorded_harness_run_reads_back_exactly(tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    run, dataset = recorded_run(tmp_path)
    (path,) = _export([str(run)], tmp_path / "logs", tmp_path, ["--dataset", str(dataset)])
    log = read_eval_log(str(path))
    score = [json.loads(line) for line in (VECTORS / "score.jsonl").read_text().splitlines()]
    metric = json.loads((VECTORS / "metric.json").read_text())

    assert log.status == "success"
    assert log.eval.task == "wildtoolbench" and log.eval.model == "scripted"
    expected_ids = [f"{row['id']}_t{i}" for row in score for i in range(len(row["results"]))]
    # one sample per task (Inspect keeps its own order of samples in the file)
    assert sorted(s.id for s in log.samples) == sorted(expected_ids) and len(expected_ids) == 256
    verdicts = {f"{row['id']}_t{i}": "C" if task["label"] == "correct" else "I"
                for row in score for i, task in enumerate(row["results"])}
    assert {s.id: s.scores["verdict"].value for s in log.samples} == verdicts
    assert sum(v == "C" for v in verdicts.values()) == metric["total_info"]["task"]["correct_count"] == 136
    assert log.results.total_samples == 256 and log.results.completed_samples == 256
    scores = {s.name: {k: m.value for k, m in s.metrics.items()} for s in log.results.scores}
    # the standard errors beside them, clustered by session (the figures `report` prints: 2.97 and 2.64 points)
    assert {k: round(v, 6) for k, v in scores["verdict"].items()} == {
        "accuracy": 0.53125, "session_accuracy": 0.046875, "stderr": 0.029725, "session_stderr": 0.026421}
    assert round(scores["table6"]["single_stderr"], 2) == 9.08 and round(scores["table7"]["ap_overall_stderr"], 2) == 2.75
    table6 = next(s for s in log.results.scores if s.name == "table6")
    assert table6.metadata["uncertainty"]["task_acc"]["n"] == 256
    assert table6.metadata["uncertainty"]["task_acc"]["sessions"] == 64
    assert scores["table6"]["single"] == pytest.approx(100 * metric["task_type_info"]["Single-Tool"]["accuracy"],
                                                       abs=1e-4)
    assert scores["table6"]["session_acc"] == pytest.approx(4.6875)
    assert scores["table7"]["acc_multi_S"] == pytest.approx(
        100 * metric["task_type_info"]["Sequential Multi-Tool"]["accuracy"], abs=1e-4)

    # the conversation of a task's last step as the result file recorded it, then the model's reply
    sample = next(s for s in log.samples if s.id == "wild_tool_bench_1_t1")
    result = [json.loads(line) for line in (VECTORS / "result.jsonl").read_text().splitlines()]
    task = result[1]["result"][1]
    last = max((k for k in task["inference_log"] if k.startswith("step_")), key=lambda k: int(k[5:]))
    shown = task["inference_log"][last]["inference_input"]["messages"]
    assert [(m.role, m.text) for m in sample.input] == [(m["role"], m["content"] or "") for m in shown]
    reply = task["inference_log"][last]["inference_output"]
    assert sample.messages[-1].text == (reply["content"] or "")
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in reply["tool_calls"] or []]
    assert [(c.function, c.arguments) for c in sample.messages[-1].tool_calls or []] == calls
    assert len(sample.metadata["steps"]) == int(last[5:]) + 1
    assert log.eval.metadata["not_carried"][-1].startswith("report sections beyond Table 6/7")


def test_the_oracle_demo_and_an_older_manifest_read_back_with_metadata(tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    demo = oracle_demo(tmp_path)
    older = older_manifest_run(tmp_path)
    paths = _export([str(demo), str(older)], tmp_path / "logs", tmp_path)
    again = _export([str(demo)], tmp_path / "logs", tmp_path)
    assert again == paths[:1]  # exporting again replaces the run's log
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == sorted(p.name for p in paths)

    manifest = json.loads((demo / "manifest.json").read_text())
    result = [json.loads(line) for line in
              (demo / "result" / "Qwen_Qwen3-8B" / "Wild-Tool-Bench_result.jsonl").read_text().splitlines()]
    log = read_eval_log(str(paths[0]))
    assert log.eval.model == "Qwen/Qwen3-8B" and len(log.samples) == 32
    assert all(s.scores["verdict"].value == "C" and s.scores["error_label"].value == "none" for s in log.samples)
    meta = log.eval.metadata
    assert meta["config_hash"] == manifest["config_hash"] and meta["config"] == manifest["config"]
    assert meta["protocol"] == {"name": "release", "checker": "strict",
                                "rules": "the released evaluator (docs/evaluation.md)"}
    assert meta["settings"] == manifest["settings"] and meta["status"] == "complete"
    assert log.eval.packages["wtb_local"] == manifest["wtb_local"]["version"]
    assert log.eval.revision is not None and log.eval.revision.commit == manifest["wtb_local"]["git_commit"]
    # every step's raw completion and parsed calls, as the result file recorded them
    first = result[0]["result"][0]["inference_log"]
    sample = next(s for s in log.samples if s.id == "wild_tool_bench_0_t0")
    steps = sample.metadata["steps"]
    assert [s["raw"] for s in steps] == [first[f"step_{i}"]["inference_output"]["raw"] for i in range(len(steps))]
    assert [s["tool_calls"] for s in steps] == [first[f"step_{i}"]["inference_output"]["tool_calls"]
                                                for i in range(len(steps))]
    assert sample.output.completion == steps[-1]["raw"]

    older_log = read_eval_log(str(paths[1]))
    assert len(older_log.samples) == 8 and older_log.eval.model == "Qwen/Qwen3-8B"
    assert older_log.eval.model_generate_config.max_tokens == 512  # read from the older top-level `sampling`


@pytest.mark.parametrize(("status", "inspect_status"), [("interrupted", "cancelled"), ("incomplete", "cancelled"),
                                                         ("failed", "error")])
def test_a_run_that_did_not_complete_keeps_its_status(tmp_path: Path, status: str, inspect_status: str) -> None:
    from wtb_local.analysis.exports.inspect_log import build_log
    from wtb_local.analysis.exports.source import load_export_runs

    demo = oracle_demo(tmp_path, limit=1)
    manifest = json.loads((demo / "manifest.json").read_text())
    manifest["status"] = status
    manifest["invocations"][-1]["failure"] = "engine died" if status == "failed" else None
    (demo / "manifest.json").write_text(json.dumps(manifest))
    (run,) = load_export_runs([demo])
    log = build_log(run)
    assert (log.status, log.eval.metadata["status"]) == (inspect_status, status)
    assert f"status {status}: Inspect's closest is {inspect_status} (the manifest's status is in the eval " \
           "metadata)" in log.eval.metadata["not_carried"]
    assert (log.error.message if log.error else None) == ("engine died" if status == "failed" else None)


def test_the_transcript_holds_each_step_as_a_model_event_and_its_tool_results(tmp_path: Path) -> None:
    """Inspect's transcript tab reads a sample's events: per step the conversation shown, the tools offered
    and the reply, then the observation the next step was shown for each call, as the result file has them."""
    from inspect_ai.log import read_eval_log

    run, dataset = recorded_run(tmp_path)
    (path,) = _export([str(run)], tmp_path / "logs", tmp_path, ["--dataset", str(dataset)])
    log = read_eval_log(str(path))
    result = [json.loads(line) for line in (VECTORS / "result.jsonl").read_text().splitlines()]
    task = next(row for row in result if row["id"] == "wild_tool_bench_60")["result"][2]  # 7 steps
    steps = [task["inference_log"][f"step_{i}"] for i in range(len(
        [k for k in task["inference_log"] if k.startswith("step_")]))]
    sample = next(s for s in log.samples if s.id == "wild_tool_bench_60_t2")
    models = [e for e in sample.events if e.event == "model"]
    assert len(models) == len(steps) > 1
    for event, step, tokens_in, tokens_out in zip(models, steps, task["input_token_count"],
                                                  task["output_token_count"], strict=False):
        shown = step["inference_input"]
        assert [(m.role, m.text) for m in event.input] == [(m["role"], m["content"] or "") for m in shown["messages"]]
        assert [t.name for t in event.tools] == [t["function"]["name"] for t in shown["tools"]]
        reply = step["inference_output"]
        assert event.output.message.text == (reply["content"] or "")
        calls = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in reply["tool_calls"] or []]
        assert [(c.function, c.arguments) for c in event.output.message.tool_calls or []] == calls
        assert event.output.usage is not None
        assert (event.output.usage.input_tokens, event.output.usage.output_tokens) == (tokens_in, tokens_out)
    tools = [e for e in sample.events if e.event == "tool"]
    observed = {m["tool_call_id"]: m["content"] for step in steps[1:] for m in step["inference_input"]["messages"]
                if m["role"] == "tool"}
    assert tools and {e.id: e.result for e in tools}.items() <= observed.items()
    assert sample.events.index(tools[0]) > sample.events.index(models[0])  # after the reply that made the call
    assert not any("model events" in line for line in log.eval.metadata["not_carried"])
