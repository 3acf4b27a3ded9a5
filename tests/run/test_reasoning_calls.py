"""A tool call written inside a closed reasoning block (docs/parser-policies.md §1), end to end through the
real commands: an oracle run's first reply is rewritten so that its reasoning holds one of its calls, then
the run is replayed with the hermes parser. The call inside the reasoning is not executed (the release
protocol, as vLLM), the step is recorded with `calls_in_reasoning`, the run prints one line about it and the
report's run health counts it."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.run.conftest import RESULT_NAME, read_jsonl

ROOT = Path(__file__).resolve().parents[2]
MODEL = "Qwen_Qwen3-8B"


def _wtb(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "WTB_PROGRESS": "none"}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, capture_output=True, text=True,
                          env=env, timeout=600)


def test_a_call_inside_reasoning_is_not_executed_and_is_counted(tmp_path: Path) -> None:
    recorded = tmp_path / "oracle"
    done = _wtb("--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "1",
                "--out", str(recorded))
    assert done.returncode == 0, done.stderr
    result_file = recorded / "result" / MODEL / RESULT_NAME
    rows = read_jsonl(result_file)
    step = rows[0]["result"][0]["inference_log"]["step_0"]["inference_output"]
    calls = step["raw"]
    first = calls[: calls.index("</tool_call>") + len("</tool_call>")]
    assert calls.count("<tool_call>") == 2  # the gold step: two parallel calls
    step["raw"] = f"<think>\nLet me check. {first} First the cities.\n</think>\n\n{calls}"
    result_file.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")

    out = tmp_path / "replayed"
    done = _wtb("--backend", "replay", "--replay", str(result_file), "--parser", "hermes", "--model", "Qwen/Qwen3-8B",
                "--dataset", "sample", "--limit", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert ("steps with a tool call inside the reasoning block: 1 (1 call(s), not executed, as vLLM's reasoning "
            "parsers drop them; docs/parser-policies.md)") in done.stdout.splitlines()
    replayed = read_jsonl(out / "result" / MODEL / RESULT_NAME)
    output = replayed[0]["result"][0]["inference_log"]["step_0"]["inference_output"]
    assert output["calls_in_reasoning"] == 1 and "parse_errors" not in output
    assert [json.loads(c["function"]["arguments"]) for c in output["tool_calls"]] == [
        {"city": "Shanghai"}, {"city": "Beijing"}]  # the two calls after the block, not three
    assert output["reasoning_content"].startswith("Let me check. <tool_call>")
    assert output["current_action_name_label"] == "correct"
    others = [s["inference_output"] for row in replayed for t in row["result"]
              for k, s in t["inference_log"].items() if k.startswith("step_")][1:]
    assert others and not any("calls_in_reasoning" in s for s in others)

    report = _wtb("report", str(out), "--out", str(tmp_path / "report"), "--format", "csv")
    assert report.returncode == 0, report.stderr
    with open(tmp_path / "report" / "health.csv", encoding="utf-8", newline="") as handle:
        health = list(csv.DictReader(handle))
    assert [(row["calls_in_reasoning"], row["status"]) for row in health] == [("1", "complete")]
    original = _wtb("report", str(recorded), "--out", str(tmp_path / "report-oracle"), "--format", "csv")
    assert original.returncode == 0, original.stderr
    with open(tmp_path / "report-oracle" / "health.csv", encoding="utf-8", newline="") as handle:
        assert [row["calls_in_reasoning"] for row in csv.DictReader(handle)] == ["0"]
