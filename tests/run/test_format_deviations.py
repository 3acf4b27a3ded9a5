"""Tool calls written outside the model's format (docs/parser-policies.md §3), end to end through the real
commands: the replay of `tests/fixtures/deviations/replies.jsonl` (a Qwen2.5 model's replies, hermes format,
with calls written as fenced JSON, bare JSON and Mistral's `[TOOL_CALLS]`, plus two answers holding JSON that
is not a call of the step) is run, reported and compared. Each step names its foreign wrapper, the run's
output has one line, `report` counts them in run health and per kind (and its trajectory browser shows each
step's, in headless chromium), `parsers compare` per parser; the
release protocol judges these replies as text, with the very score and metric files the code wrote before
the deviations were recorded, and the paper protocol's qwen rule does the same."""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.conftest import METRIC_NAME, RESULT_NAME, SCORE_NAME, TIMING_KEYS, read_jsonl

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "deviations"
MODEL = "Qwen/Qwen2.5-Coder-0.5B-Instruct"
MODEL_DIR = "Qwen_Qwen2.5-Coder-0.5B-Instruct"

# (session, task, step) -> the step's record, as the release protocol (hermes) reads the fixture
RELEASE_DEVIATIONS = {
    ("wild_tool_bench_0", 0, 0): {"kind": "fenced_json", "calls": 2},
    ("wild_tool_bench_0", 1, 0): {"kind": "bare_json", "calls": 1},
    ("wild_tool_bench_0", 3, 0): {"kind": "format:mistral", "calls": 1},
    ("wild_tool_bench_1", 2, 0): {"kind": "fenced_json", "calls": 1},  # beside a call in <tool_call> tags
}
# the task verdicts: every task whose first step wrote its calls in a foreign wrapper is an error
VERDICTS = [("wild_tool_bench_0", "error"), ("wild_tool_bench_0", "error"), ("wild_tool_bench_0", "correct"),
            ("wild_tool_bench_0", "error"), ("wild_tool_bench_1", "correct"), ("wild_tool_bench_1", "correct"),
            ("wild_tool_bench_1", "error"), ("wild_tool_bench_1", "correct")]
TEXT_JUDGED = "action name not in candidate_answer_function_list"


def _wtb(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("WTB_")}, "PYTHONPATH": str(ROOT),
           "HF_HUB_OFFLINE": "1", "WTB_PROGRESS": "none"}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600)


def _replay(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    done = _wtb("--backend", "replay", "--replay", str(FIXTURES / "replies.jsonl"), "--model", MODEL,
                "--dataset", "sample", "--out", str(out), *extra)
    assert done.returncode == 0, done.stderr
    return done


def _steps(result_file: Path) -> dict[tuple[str, int, int], dict]:
    return {(row["id"], task["inference_log"]["task_idx"], int(key[5:])): step["inference_output"]
            for row in read_jsonl(result_file) for task in row["result"]
            for key, step in task["inference_log"].items() if key.startswith("step_")}


def _without(path: Path, keys: frozenset[str]) -> str:
    """A score file's text with these keys removed from every step's `inference_output`, written as the
    project writes score files (one `json.dumps(ensure_ascii=False)` line per session)."""
    lines = []
    for row in read_jsonl(path):
        for task in row["results"]:
            for key, step in task["inference_log"].items():
                if key.startswith("step_"):
                    for name in keys:
                        step["inference_output"].pop(name, None)
        lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    return "".join(lines)


@pytest.fixture(scope="module")
def release_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out = tmp_path_factory.mktemp("deviations") / "release"
    return out, _replay(out, "--parser", "hermes")


def test_each_step_names_its_foreign_wrapper_and_the_run_says_so(release_run) -> None:
    out, done = release_run
    assert ("steps with tool calls outside the model's tool-call format: 4 (bare_json 1, fenced_json 2, "
            "format:mistral 1; 5 call(s), not executed: judged as text replies, as the released evaluator does; "
            "docs/parser-policies.md)") in done.stdout.splitlines()
    steps = _steps(out / "result" / MODEL_DIR / RESULT_NAME)
    assert len(steps) == 12
    assert {key: step["format_deviation"] for key, step in steps.items() if "format_deviation" in step} == \
        RELEASE_DEVIATIONS
    # judged as text: no call executed, the reply's text kept as it was written
    for key in [k for k in RELEASE_DEVIATIONS if k != ("wild_tool_bench_1", 2, 0)]:
        assert steps[key]["tool_calls"] is None and steps[key]["content"] == steps[key]["raw"]
        assert (steps[key]["current_action_name_label"], steps[key]["error_reason"]) == ("error", TEXT_JUDGED)
    beside = steps[("wild_tool_bench_1", 2, 0)]
    assert [json.loads(c["function"]["arguments"]) for c in beside["tool_calls"]] == [{"airportCode": "CAN"}]
    assert beside["content"].startswith("And for Beijing:\n```json\n")
    # the negatives: JSON that is not a call, a call-shaped object naming no tool of the step
    assert steps[("wild_tool_bench_0", 2, 0)]["current_action_name_label"] == "correct"
    assert '{"name": "packing_list", "arguments"' in steps[("wild_tool_bench_1", 3, 0)]["raw"]


def test_the_release_protocol_judges_them_exactly_as_before(release_run) -> None:
    out, _ = release_run
    score_dir = out / "score" / MODEL_DIR
    labels = [(row["id"], task["label"]) for row in read_jsonl(score_dir / SCORE_NAME) for task in row["results"]]
    assert labels == VERDICTS
    before = gzip.decompress((FIXTURES / "release_score_before.jsonl.gz").read_bytes()).decode("utf-8")
    assert _without(score_dir / SCORE_NAME, TIMING_KEYS | {"format_deviation"}) == before
    assert (score_dir / METRIC_NAME).read_bytes() == (FIXTURES / "release_metric_before.json").read_bytes()


def test_report_counts_them_in_run_health_and_per_kind(release_run, tmp_path: Path) -> None:
    out, _ = release_run
    done = _wtb("report", str(out), "--out", str(tmp_path / "report"), "--format", "md,csv,html")
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "report" / "health.csv", encoding="utf-8", newline="") as handle:
        health = list(csv.DictReader(handle))
    assert [(row["steps"], row["format_deviations"], row["calls_in_reasoning"]) for row in health] == [
        ("12", "4", "0")]
    with open(tmp_path / "report" / "format_deviations.csv", encoding="utf-8", newline="") as handle:
        per_kind = list(csv.DictReader(handle))
    assert per_kind == [{"model": MODEL_DIR, "kind": "ours", "steps": "4", "calls": "5", "bare_json": "1",
                         "fenced_json": "2", "format:mistral": "1"}]
    # judged as text where a call was due, three of the four failed tasks are classified Refusal
    with open(tmp_path / "report" / "errors.csv", encoding="utf-8", newline="") as handle:
        errors = list(csv.DictReader(handle))
    assert [(row["failed"], row["Refusal"], row["Call Error"]) for row in errors] == [("4", "75.0000", "25.0000")]
    lines = done.stdout.splitlines()
    title = lines.index("Format deviations: steps with tool calls outside the model's format")
    assert lines[title + 1].split() == ["model", "steps", "calls", "bare_json", "fenced_json", "format:mistral"]
    assert lines[title + 2].split() == [MODEL_DIR, "4", "5", "1", "2", "1"]
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert '<section id="sec-format_deviations">' in page
    # the column's header carries its definition as a hover title (reports/glossary.py)
    assert ("<th title=\"steps with calls in the mistral parser&#x27;s format, another family&#x27;s\">"
            "format:mistral</th>") in page


@pytest.mark.parametrize("model", [MODEL, "meta-llama/Llama-3.1-8B-Instruct", "MadeAgents/Hammer2.1-7b",
                                   "mistralai/Mistral-7B-Instruct-v0.3", "openai/gpt-oss-20b"])
def test_a_run_without_deviations_shows_none(model: str, tmp_path: Path) -> None:
    """The oracle writes each model's own format (bare JSON for Llama 3.1, fenced JSON lists for Hammer):
    no step counted, no line; 0 in run health and no per-kind section."""
    out = tmp_path / "oracle"
    done = _wtb("--model", model, "--backend", "oracle", "--dataset", "sample", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert not any(line.startswith("steps with tool calls outside") for line in done.stdout.splitlines())
    steps = _steps(out / "result" / model.replace("/", "_") / RESULT_NAME)
    assert len(steps) > 30 and not any("format_deviation" in step for step in steps.values())
    if model != MODEL:
        return
    report = _wtb("report", str(out), "--out", str(tmp_path / "report"), "--format", "csv")
    assert report.returncode == 0, report.stderr
    with open(tmp_path / "report" / "health.csv", encoding="utf-8", newline="") as handle:
        assert [row["format_deviations"] for row in csv.DictReader(handle)] == ["0"]
    assert not (tmp_path / "report" / "format_deviations.csv").exists()


def test_parsers_compare_shows_them_per_parser(release_run) -> None:
    """Per parser: what hermes leaves in foreign wrappers, and what mistral does (the model's own hermes calls
    are, for it, another family's format)."""
    out, _ = release_run
    done = _wtb("parsers", "compare", str(out), "--parsers", "hermes,mistral", "--format", "json")
    assert done.returncode == 0, done.stderr
    completions = json.loads(done.stdout)["completions"]
    assert completions["hermes"]["format_deviations"] == {"bare_json": 1, "fenced_json": 2, "format:mistral": 1}
    assert completions["mistral"]["format_deviations"] == {"bare_json": 1, "fenced_json": 1, "format:hermes": 3}
    markdown = _wtb("parsers", "compare", str(out), "--parsers", "hermes,mistral")
    assert markdown.returncode == 0, markdown.stderr
    lines = markdown.stdout.splitlines()
    assert "| hermes | 3 | 3 | 0 | 0 | 4 (bare_json 1, fenced_json 2, format:mistral 1) | 0 |" in lines
    assert "| mistral | 1 | 1 | 0 | 0 | 5 (bare_json 1, fenced_json 1, format:hermes 3) | 4 |" in lines


def test_the_paper_protocol_qwen_rule_reads_them_as_text_too(tmp_path: Path) -> None:
    """`--protocol paper`: the qwen rule (docs/parser-policies.md §3) reads none of them either; it keeps only
    the text before a call, so the fenced call written after a tagged one is not seen."""
    out = tmp_path / "paper"
    done = _replay(out, "--protocol", "paper")
    assert ("steps with tool calls outside the model's tool-call format: 3 (bare_json 1, fenced_json 1, "
            "format:mistral 1; 4 call(s), not read as calls by the family's parse rule, as in the paper harness; "
            "docs/parser-policies.md)") in done.stdout.splitlines()
    steps = _steps(out / "result" / MODEL_DIR / RESULT_NAME)
    found = {key: step["format_deviation"] for key, step in steps.items() if "format_deviation" in step}
    assert found == {key: value for key, value in RELEASE_DEVIATIONS.items() if key != ("wild_tool_bench_1", 2, 0)}
    assert all(steps[key]["current_action_name_label"] == "error" and steps[key]["tool_calls"] is None
               for key in found)
    assert steps[("wild_tool_bench_1", 2, 0)]["content"] == ""
    labels = [(row["id"], task["label"]) for row in read_jsonl(out / "score" / MODEL_DIR / SCORE_NAME)
              for task in row["results"]]
    assert labels == VERDICTS


OPEN_FIRST_TASK = """<script>
window.addEventListener("load", function () {
  document.querySelector("#b-rows tr").click();
  var shown = Array.prototype.map.call(document.querySelectorAll("#b-detail .step .k"), function (k) {
    return k.textContent; }).filter(function (t) { return t.indexOf("format deviation") === 0; });
  var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(shown);
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.browser
def test_the_trajectory_browser_shows_a_steps_deviation(release_run, tmp_path: Path) -> None:
    """The first task (two calls in fenced JSON) opened in Debian's headless chromium: its step says so.
    Skipped only when chromium is absent outside CI (`CI=true`: it must run)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
            pytest.fail("chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium; CI installs it)")
    out, _ = release_run
    done = _wtb("report", str(out), "--out", str(tmp_path / "report"), "--format", "html")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", OPEN_FIRST_TASK + "</body>", 1), encoding="utf-8")
    browser = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert browser.returncode == 0, browser.stderr[-2000:]
    match = re.search(r'<pre id="probe">(.*?)</pre>', browser.stdout, re.DOTALL)
    assert match, browser.stdout[-2000:]
    assert json.loads(match.group(1).replace("&quot;", '"')) == ["format deviation: fenced_json, 2 call(s) not executed"]
