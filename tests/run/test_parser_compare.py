"""`parsers compare RUN_DIR --parsers a,b,...` on a tiny-model run (the tiny Qwen2.5-template model's
tokenizer, openai backend, the loopback server's canned replies), through the real command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.run.conftest import RESULT_NAME, invoke, read_jsonl
from tests.run.fake_openai import CANNED, fake_openai_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def recorded_run(qwen_tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("compare") / "run"
    with fake_openai_server(str(qwen_tiny_dir)) as server:
        result = invoke(["--backend", "openai", "--base-url", server.base_url, "--model", str(qwen_tiny_dir),
                         "--model-name", "fake", "--dataset", "sample", "--out", str(out), "--progress", "none"])
    assert result.exit_code == 0, result.output
    return out


def _compare(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WTB_")}
    return subprocess.run([sys.executable, "-m", "wtb_local", "parsers", "compare", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def _recorded_kinds(run: Path) -> Counter:
    """How many recorded completions are each canned reply (served ones: an HTTP 400 records no text)."""
    by_text = {text: kind for kind, text in CANNED if kind != "http400"}
    kinds: Counter = Counter()
    for row in read_jsonl(run / "result" / "fake" / RESULT_NAME):
        for task in row["result"]:
            for key, step in task["inference_log"].items():
                output = step.get("inference_output") if key.startswith("step_") else None
                if output and output.get("finish_reason") != "error" and isinstance(output.get("raw"), str):
                    kinds[by_text[output["raw"]]] += 1
    return kinds


def test_compare_counts_calls_failures_and_disagreements(recorded_run: Path, tmp_path: Path) -> None:
    proc = _compare(str(recorded_run), "--parsers", "hermes,qwen3_coder,llama3_json", "--format", "json",
                    "--keep", str(tmp_path / "replays"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    kinds = _recorded_kinds(recorded_run)
    call, partial, broken = kinds["call"], kinds["partial"], kinds["broken"]
    assert call and partial and broken and kinds["text"]
    assert report["recorded_parser"] == "hermes" and report["baseline"] == "hermes"
    assert report["recorded_steps"] == sum(kinds.values())
    summary = {name: {k: v for k, v in entry.items() if k not in ("examples", "steps")}
               for name, entry in report["completions"].items()}
    # hermes keeps the call with unreadable arguments (partial) and fails on the non-JSON block;
    # qwen3_coder reads the JSON call but not the unreadable one; llama3_json reads any JSON object and
    # takes the non-JSON block for text (no error): both differences are disagreements with hermes. On the
    # clean Hermes call llama3_json takes the same call but leaves the foreign markup as the reply's text:
    # a disagreement too (docs/parser-policies.md §2).
    assert summary == {
        "hermes": {"calls": call + partial, "steps_with_calls": call + partial, "parse_failures": broken,
                   "partial_parses": partial, "format_deviations": {}, "disagreements": 0},
        "qwen3_coder": {"calls": call, "steps_with_calls": call, "parse_failures": partial + broken,
                        "partial_parses": 0, "format_deviations": {}, "disagreements": partial},
        "llama3_json": {"calls": call + partial, "steps_with_calls": call + partial, "parse_failures": 0,
                        "partial_parses": partial, "format_deviations": {},
                        "disagreements": call + partial + broken},
    }
    examples = report["completions"]["llama3_json"]["examples"]
    assert all(set(example) == {"request", "raw", "differs", "hermes", "llama3_json"} for example in examples)
    by_raw = {example["raw"]: example for example in examples}
    assert set(by_raw) <= {CANNED[1][1], CANNED[2][1], CANNED[3][1]}

    tasks = report["tasks"]
    assert all(entry["tasks"] == 32 for entry in tasks.values())
    assert all(e["correct"] + e["errors"] + e["not_comparable"] == 32 for e in tasks.values())
    metric = json.loads((recorded_run / "score" / "fake" / "Wild-Tool-Bench_metric.json").read_text())
    # the recorded parser replays every step it led to: nothing unrecorded, the run's own verdicts
    assert tasks["hermes"]["not_comparable"] == 0 and tasks["hermes"]["verdicts_differing"] == 0
    assert tasks["hermes"]["correct"] == metric["total_info"]["task"]["correct_count"]
    # llama3_json accepts the unreadable block as a final text answer, so its tasks go where none was recorded
    assert tasks["llama3_json"]["not_comparable"] > 0
    replayed = read_jsonl(tmp_path / "replays" / "llama3_json" / "result" / "fake" / RESULT_NAME)
    assert len(replayed) == 8
    # one number per fact: the accuracy is the replay run's own task accuracy (not-comparable tasks are
    # step errors there); the comparable-only figure leaves them out of the denominator
    for name in ("hermes", "llama3_json"):
        replay_metric = json.loads((tmp_path / "replays" / name / "score" / "fake" / "Wild-Tool-Bench_metric.json")
                                   .read_text())
        assert tasks[name]["accuracy"] == round(100 * replay_metric["total_info"]["task"]["accuracy"], 2)
        entry = tasks[name]
        assert entry["accuracy_comparable"] == round(100 * entry["correct"] / (32 - entry["not_comparable"]), 2)


def test_compare_markdown_and_errors(recorded_run: Path) -> None:
    proc = _compare(str(recorded_run), "--parsers", "hermes,llama3_json")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"# Parser comparison: {recorded_run}"
    assert ("| parser | calls | steps with calls | parse failures | partial parses | format deviations | "
            "disagreements with hermes |") in lines
    assert any(line.startswith("| llama3_json | 32 | ") for line in lines)
    assert "### llama3_json vs hermes" in lines
    assert any(line.startswith("accuracy %: correct tasks over all tasks, the figure a replay") for line in lines)
    bad = _compare(str(recorded_run), "--parsers", "hermes,nosuch")
    assert bad.returncode == 1 and bad.stderr.startswith("Error: --parsers: ") and len(bad.stderr.splitlines()) == 1


def test_the_replay_warning_says_what_it_counts(recorded_run: Path, tmp_path: Path) -> None:
    """A replay through another parser reaches steps the run never recorded: the warning counts them and,
    since each message names its own step, says the one it shows is the first of that many."""
    out = tmp_path / "replay"
    result = invoke(["--backend", "replay", "--replay", str(recorded_run), "--parser", "llama3_json", "--out",
                     str(out), "--progress", "none"])
    assert result.exit_code == 0, result.output
    unrecorded = [step["inference_output"]["error_reason"]
                  for row in read_jsonl(out / "result" / "fake" / RESULT_NAME) for task in row["result"]
                  for key, step in task["inference_log"].items()
                  if key.startswith("step_") and str(step["inference_output"].get("error_reason") or "")
                  .startswith("no recorded completion for ")]
    assert len(set(unrecorded)) == len(unrecorded) > 1
    warning = [line for line in result.stderr.splitlines() if "request(s) failed" in line]
    # (the recorded run's own HTTP 400s, one message, replay as failed requests too)
    assert len(warning) == 1 and warning[0].startswith("warning: ")
    assert (f"{unrecorded[0]} and {len(unrecorded) - 1} more of that kind, with other numbers "
            f"({len(unrecorded)})") in warning[0]
