"""The parser policies of docs/parser-policies.md through the real `parsers` commands (subprocesses): a
call written inside a closed reasoning block (§1), a reply in a foreign format (§2), tool calls written in a
foreign wrapper (§3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULT = "Wild-Tool-Bench_result.jsonl"
HERMES_CALL = '<tool_call>\n{"name": "search", "arguments": {"query": "x"}}\n</tool_call>'


def _wtb(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("WTB_")}, "PYTHONPATH": str(ROOT),
           "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


def _parse(tmp_path: Path, parser: str, *raws: str) -> list[dict]:
    source = tmp_path / f"{parser}.jsonl"
    source.write_text("".join(json.dumps({"raw": raw}) + "\n" for raw in raws), encoding="utf-8")
    done = _wtb("parsers", "parse", str(source), "--parser", parser)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_parse_a_call_inside_the_reasoning_block(tmp_path: Path) -> None:
    inside = f"<think>\nLet me see. {HERMES_CALL} No, not yet.\n</think>\n\nDone."
    [row] = _parse(tmp_path, "hermes", inside)
    assert row == {"parser": "hermes", "reasoning": f"Let me see. {HERMES_CALL} No, not yet.", "content": "Done.",
                   "tool_calls": [], "errors": [], "calls_in_reasoning": 1,
                   "format_deviation": None}


def test_parse_names_calls_in_a_foreign_wrapper(tmp_path: Path) -> None:
    """Each row's `format_deviation`, with the row's tools: fenced JSON, Mistral's tags, and an answer whose
    call-shaped JSON names no tool of the row (not counted)."""
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {}}}}]
    call = '{"name": "search", "arguments": {"query": "x"}}'
    rows = [{"raw": f"Let me look.\n```json\n{call}\n```", "tools": tools},
            {"raw": f"[TOOL_CALLS][{call}]", "tools": tools},
            {"raw": 'I could run {"name": "lookup", "arguments": {"query": "x"}} for you.', "tools": tools}]
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    done = _wtb("parsers", "parse", str(source), "--parser", "hermes")
    assert done.returncode == 0, done.stderr
    parsed = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(row["tool_calls"], row["format_deviation"]) for row in parsed] == [
        ([], {"kind": "fenced_json", "calls": 1}), ([], {"kind": "format:mistral", "calls": 1}), ([], None)]
    assert parsed[0]["content"] == rows[0]["raw"]


def test_a_foreign_format_leaves_its_markup_as_content(tmp_path: Path) -> None:
    """llama3_json reads any JSON call object, so it takes the call out of a Hermes reply but leaves the
    Hermes markup as the reply's text; hermes itself leaves none."""
    [foreign] = _parse(tmp_path, "llama3_json", HERMES_CALL)
    [native] = _parse(tmp_path, "hermes", HERMES_CALL)
    call = [{"name": "search", "arguments": {"query": "x"}}]
    assert (foreign["tool_calls"], foreign["content"], foreign["errors"]) == (call, "<tool_call>\n</tool_call>", [])
    assert (native["tool_calls"], native["content"], native["errors"]) == (call, None, [])


def test_compare_shows_a_foreign_format_as_a_disagreement(tmp_path: Path) -> None:
    """An oracle run of a Hermes-format model (Qwen3-8B): llama3_json takes the same calls from every step,
    so only the content it leaves makes each call step a disagreement (§2)."""
    run = tmp_path / "run"
    done = _wtb("--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "2",
                "--out", str(run), "--progress", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    raws = [s["inference_output"]["raw"] for line in (run / "result" / "Qwen_Qwen3-8B" / RESULT).read_text().splitlines()
            for t in json.loads(line)["result"] for k, s in t["inference_log"].items() if k.startswith("step_")]
    call_steps = sum("<tool_call>" in raw for raw in raws)
    assert 0 < call_steps < len(raws)

    done = _wtb("parsers", "compare", str(run), "--parsers", "hermes,llama3_json", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    hermes, llama = report["completions"]["hermes"], report["completions"]["llama3_json"]
    assert (hermes["calls"], hermes["parse_failures"], hermes["disagreements"]) == (llama["calls"], 0, 0)
    assert llama["parse_failures"] == 0 and llama["disagreements"] == call_steps
    assert all(example["differs"] == ["content"] for example in llama["examples"])
    example = llama["examples"][0]
    assert example["hermes"]["calls"] == example["llama3_json"]["calls"] and example["hermes"]["content"] is None
    assert set(example["llama3_json"]["content"].split()) == {"<tool_call>", "</tool_call>"}
    assert report["tasks"]["llama3_json"]["verdicts_differing"] == 0  # the same calls: the same verdicts

    markdown = _wtb("parsers", "compare", str(run), "--parsers", "hermes,llama3_json")
    assert markdown.returncode == 0, markdown.stderr
    assert any(line.startswith("| llama3_json | ") and line.endswith(f" | {call_steps} |")
               for line in markdown.stdout.splitlines())
    assert any(line.startswith("- `wild_tool_bench_") and "(content differ) raw " in line
               for line in markdown.stdout.splitlines())
