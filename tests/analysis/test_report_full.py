"""The full `report`: a hand-made run whose categories and percentages are known, the benchmark harness's
own layout (the visible vectors' result and score files), plots opened and looked at, every format
written, the no-matplotlib path, and fast imports. CLI behaviour runs the real command in a subprocess."""

from __future__ import annotations

import copy
import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VECTORS = Path(__file__).parents[1] / "fixtures" / "vectors" / "sessions"
SCORE, RESULT = "Wild-Tool-Bench_score.jsonl", "Wild-Tool-Bench_result.jsonl"


def _cli(*args: str, code: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "wtb_local", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False, cwd=cwd)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("oracle") / "run"
    done = _cli("run", "--backend", "oracle", "--model", "Qwen/Qwen3-8B", "--dataset", "sample", "--out",
                str(out), "--progress", "none")
    assert done.returncode == 0, done.stderr
    return out


def _text_step(step: dict) -> dict:
    step = copy.deepcopy(step)
    step["inference_output"].update(content="I can't do that.", tool_calls=None,
                                    current_action_name_label="error",
                                    error_reason="action name not in candidate_answer_function_list")
    return step


@pytest.fixture(scope="module")
def handmade(oracle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The oracle's score file with four failures made by hand, one of each kind:
    wild_tool_bench_0 task 3 (Single-Tool): a lone text reply -> Refusal;
    wild_tool_bench_0 task 2 (Chat): a tool call -> Wrong Refusal;
    wild_tool_bench_1 task 1 (Single-Tool): a value mismatch -> Param Value Error;
    wild_tool_bench_2 task 2 (Single-Tool): a required parameter missing -> Missing Param."""
    rows = [json.loads(line) for line in (oracle / "score" / "Qwen_Qwen3-8B" / SCORE).read_text().splitlines()]
    tasks = {(r["id"], i): t for r in rows for i, t in enumerate(r["results"])}
    refusal = tasks[("wild_tool_bench_0", 3)]
    refusal["inference_log"] = {"task_idx": 3, "begin_of_current_task": None,
                                "step_0": _text_step(refusal["inference_log"]["step_0"])}
    chat = tasks[("wild_tool_bench_0", 2)]
    step = copy.deepcopy(chat["inference_log"]["step_0"])
    step["inference_output"].update(content=None, current_action_name_label="error",
                                    tool_calls=[{"id": "c", "type": "function", "function": {
                                        "name": "getCityAQIForecast", "arguments": "{}"}}])
    chat["inference_log"]["step_0"] = step
    for key, message in ((("wild_tool_bench_1", 1), "error_match: value mismatch at 'x'"),
                         (("wild_tool_bench_2", 2), "error_schema: required args missing")):
        task = tasks[key]
        task["action_arguments_label"] = "error"
        output = task["inference_log"]["step_0"]["inference_output"]
        output["current_action_arguments_label"] = "error"
        output["current_action_arguments_check_result"] = [message]
    for task in (refusal, chat):
        task["action_name_label"] = "error"
        task.pop("action_arguments_label", None)
    for task in (refusal, chat, tasks[("wild_tool_bench_1", 1)], tasks[("wild_tool_bench_2", 2)]):
        task["label"], task["is_optimal"] = "error", False
        task.pop("error_category", None)  # report classifies by itself
    folder = tmp_path_factory.mktemp("handmade") / "score" / "my-model"
    folder.mkdir(parents=True)
    (folder / SCORE).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder.parent.parent


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_handmade_run_categories_and_percentages(handmade: Path, tmp_path: Path) -> None:
    done = _cli("report", str(handmade), "--dataset", "sample", "--out", str(tmp_path), "--format", "csv,md,json")
    assert done.returncode == 0, done.stderr
    assert "my-model" in done.stdout and "87.50" in done.stdout  # task accuracy 28/32
    errors = _csv(tmp_path / "errors.csv")
    assert [(r["model"], r["failed"], r["Refusal"], r["Wrong Refusal"], r["Param Value Error"],
             r["Missing Param"], r["Redundant Call"]) for r in errors] == [
        ("my-model", "4", "25.0000", "25.0000", "25.0000", "25.0000", "0.0000")]
    table8 = _csv(tmp_path / "table8.csv")
    assert [(r["refusal"], r["wrong_refusal"], r["param_value_error"], r["wrong_name_missing_info"])
            for r in table8] == [("25.0000", "25.0000", "50.0000", "0.0000")]
    transitions = _csv(tmp_path / "transitions.csv")
    assert [r["n0"] for r in transitions] == ["10"]  # 8 first tasks + 2 with no type change
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert [s["key"] for s in report["sections"]] == ["table6", "table7", "subtypes", "transitions", "table8",
                                                      "errors", "health"]
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| my-model | 25.00 | 0.00 | 25.00 |" in markdown
    assert "Indicative only" in markdown


def test_paper_rows_and_differences(oracle: Path, tmp_path: Path) -> None:
    done = _cli("report", str(oracle), "--out", str(tmp_path), "--format", "csv")
    assert done.returncode == 0, done.stderr
    six = _csv(tmp_path / "table6.csv")
    # the oracle renders no prompt: compared as Qwen3's template default (thinking), as the note says
    assert [(r["model"], r["kind"]) for r in six] == [
        ("Qwen_Qwen3-8B", "ours"), ("paper: Qwen3-8B-Thinking", "paper"), ("diff: Qwen_Qwen3-8B", "diff"),
        ("Qwen_Qwen3-8B: ± se", "se"), ("Qwen_Qwen3-8B: 95% low", "low"), ("Qwen_Qwen3-8B: 95% high", "high"),
        ("Qwen_Qwen3-8B: n", "n")]
    assert six[1]["task_acc"] == "54.3000" and six[2]["task_acc"] == "45.7000"
    # every task right: no spread, so se 0; Wilson's 32 of 32 is 32 / (32 + 1.96^2) = 89.28..100; 8 sessions
    assert [six[i]["task_acc"] for i in range(3, 7)] == ["0.0000", "89.2821", "100.0000", "32"]
    assert [six[i]["session_acc"] for i in range(3, 7)] == ["0.0000", "67.5592", "100.0000", "8"]
    assert "diff: Qwen_Qwen3-8B       +43.36" in done.stdout
    assert ("note: Qwen_Qwen3-8B: paper row Qwen3-8B-Thinking: the run records no thinking mode (its manifest "
            "says: no prompt rendered: unknown); compared as its model's chat template behaves without a switch: "
            "Qwen3's chat template thinks unless enable_thinking=false (--no-thinking: Qwen3-8B)"
            ) in done.stdout.splitlines()
    assert ("note: Qwen_Qwen3-8B: 8 of the release's 256 sessions were scored (dataset: sample); the paper's row "
            "is over all 256.") in done.stdout.splitlines()
    health = _csv(tmp_path / "health.csv")
    assert health[0]["tasks"] == "32" and health[0]["steps"] == "74" and health[0]["parse_failure_pct"] == "0.0000"
    assert health[0]["failed_requests"] == "0" and health[0]["status"] == "complete"


def test_benchmark_harness_layout_from_the_vectors(tmp_path: Path) -> None:
    """The reference's own files (result and score of the visible vectors), as its harness lays them out."""
    harness = tmp_path / "harness"
    for kind, name, source in (("result", RESULT, "result.jsonl"), ("score", SCORE, "score.jsonl")):
        (harness / kind / "gpt-4o").mkdir(parents=True)
        shutil.copy(VECTORS / source, harness / kind / "gpt-4o" / name)
    missing = _cli("report", str(harness))
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "pass --dataset" in missing.stderr
    done = _cli("report", str(harness), "--dataset", str(VECTORS / "dataset.jsonl"), "--out", str(tmp_path / "r"),
                "--format", "csv,html")
    assert done.returncode == 0, done.stderr
    six = _csv(tmp_path / "r" / "table6.csv")
    assert [r["model"] for r in six] == ["gpt-4o", "paper: GPT-4o", "diff: gpt-4o", "gpt-4o: ± se",
                                         "gpt-4o: 95% low", "gpt-4o: 95% high", "gpt-4o: n"]
    assert six[0]["task_acc"] == "53.1250" and six[0]["session_acc"] == "4.6875"
    # the task accuracy's error clustered by session, as test_report_columns' fixture prints it (±2.97, n 256)
    assert (six[3]["task_acc"], six[6]["task_acc"], six[6]["session_acc"]) == ("2.9725", "256", "64")
    errors = _csv(tmp_path / "r" / "errors.csv")
    assert errors[0]["failed"] == "120" and errors[0]["Redundant Call"] == f"{100 * 46 / 120:.4f}"
    health = _csv(tmp_path / "r" / "health.csv")
    assert health[0]["parse_failure_pct"] == "" and health[0]["wall_s"] == ""  # n/a: not recorded there
    html = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert html.count('<script type="application/json" id="wtb-s-0-') == 64


def test_plots_are_drawn_and_not_blank(oracle: Path, handmade: Path, tmp_path: Path) -> None:
    from PIL import Image, ImageStat

    done = _cli("report", str(oracle), str(handmade), "--dataset", "sample", "--out", str(tmp_path),
                "--format", "png")
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert names == sorted(["accuracy_by_task_type.png", "accuracy_by_task_order.png", "accuracy_by_subtype.png",
                            "accuracy_by_transitions.png", "error_distribution.png", "run_comparison.png"])
    for name in names:
        with Image.open(tmp_path / "plots" / name) as image:
            width, height = image.size
            assert width >= 800 and height >= 300, (name, image.size)
            rgb = image.convert("RGB")
            assert len(rgb.getcolors(maxcolors=1 << 20) or []) > 20, name  # drawn, not one flat colour
            assert max(ImageStat.Stat(rgb).stddev) > 20, name


def test_without_matplotlib_the_default_skips_png_and_an_asked_png_is_an_error(oracle: Path, tmp_path: Path) -> None:
    """docs/reports.md: the default formats offer png and skip it with a note; a png asked for (alone or with
    others, by --format or WTB_REPORT_FORMAT) stops the command in one line before anything is written."""
    code = ("import sys; sys.modules['matplotlib'] = None; sys.argv = ['wtb_local', *sys.argv[1:]]; "
            "from wtb_local.cli import main; main()")
    install = f'pip install -e "{ROOT}[report]"'  # run from outside the checkout, which it names
    done = _cli("report", str(oracle), "--out", str(tmp_path / "default"), code=code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"note: png skipped: matplotlib is not installed ({install})" in done.stdout.splitlines()
    assert not (tmp_path / "default" / "plots").exists() and (tmp_path / "default" / "report.html").is_file()
    assert (tmp_path / "default" / "report.md").is_file()
    for formats in ("png", "png,html", "md,png"):
        done = _cli("report", str(oracle), "--out", str(tmp_path / formats), "--format", formats, code=code,
                    cwd=tmp_path)
        assert done.returncode == 1 and done.stdout == "", (formats, done.stdout)
        assert done.stderr == (f"Error: --format png: matplotlib is not installed ({install}); or leave png out "
                               "of --format\n")
        assert not (tmp_path / formats).exists()
    done = subprocess.run([sys.executable, "-c", code, "report", str(oracle), "--out", str(tmp_path / "env")],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "WTB_REPORT_FORMAT": "png"})
    assert done.returncode == 1 and done.stderr.startswith("Error: --format png: matplotlib is not installed")
    done = _cli("report", str(oracle), "--out", str(tmp_path / "html"), "--format", "html", code=code)
    assert done.returncode == 0 and "note: no plots in the HTML: matplotlib is not installed" in done.stdout


def test_report_imports_no_engine(oracle: Path) -> None:
    code = ("import sys; sys.argv = ['wtb_local', 'report', *sys.argv[1:]]\n"
            "from wtb_local.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'vllm', 'transformers', 'matplotlib') if m in sys.modules))")
    done = _cli(str(oracle), code=code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_bad_format_and_dataset_mismatch_are_one_line(oracle: Path, tmp_path: Path) -> None:
    bad = _cli("report", str(oracle), "--out", str(tmp_path), "--format", "md,pdf")
    assert bad.returncode == 2 and "unknown format pdf" in bad.stderr
    wrong = _cli("report", str(oracle), "--dataset", str(VECTORS / "dataset.jsonl"))
    assert wrong.returncode == 1 and wrong.stderr.count("\n") == 1 and "dataset sha256" in wrong.stderr


@pytest.mark.slow
@pytest.mark.timeout(600)  # a tiny model generating through transformers, then every report format: minutes on 2 shared cores
def test_report_of_a_tiny_model_run(tmp_path: Path) -> None:
    """A real generation run (tiny random-weight model, transformers backend): every table, the health
    figures it records (raw completions, cut by the 8-token limit, tokens, latency) and the browser."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install -e .[hf])")
    from tests.helpers import build_tiny_model
    from tests.run.conftest import chat_template

    model = build_tiny_model(tmp_path / "qwen", chat_template("Qwen/Qwen2.5-7B-Instruct"),
                             special_tokens=["<tool_call>", "</tool_call>"], max_position_embeddings=8192)
    done = _cli("run", "--backend", "transformers", "--model", str(model), "--model-name", "tiny", "--dataset",
                "sample", "--limit", "2", "--max-new-tokens", "8", "--batch-size", "8", "--out",
                str(tmp_path / "run"), "--progress", "none")
    assert done.returncode == 0, done.stderr
    done = _cli("report", str(tmp_path / "run"), "--out", str(tmp_path / "r"), "--format", "csv,html")
    assert done.returncode == 0, done.stderr
    steps = [step["inference_output"]
             for line in (tmp_path / "run" / "result" / "tiny" / RESULT).read_text().splitlines()
             for task in json.loads(line)["result"]
             for key, step in task["inference_log"].items() if key.startswith("step_")]
    health = _csv(tmp_path / "r" / "health.csv")[0]
    assert health["tasks"] == "8" and health["steps"] == str(len(steps))
    assert health["length_steps"] == str(sum(s["finish_reason"] == "length" for s in steps))
    assert int(health["length_steps"]) > 0 and health["failed_requests"] == "0"
    assert float(health["prompt_tokens_per_task"]) > 0 and float(health["generated_tokens_per_task"]) > 0
    assert float(health["latency_mean_s"]) > 0 and float(health["wall_s"]) > 0
    errors = _csv(tmp_path / "r" / "errors.csv")[0]
    six = _csv(tmp_path / "r" / "table6.csv")[0]
    assert int(errors["failed"]) == round(8 * (1 - float(six["task_acc"]) / 100))
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [
        "errors.csv", "health.csv", "report.html", "subtypes.csv", "table6.csv", "table7.csv", "table8.csv",
        "transitions.csv", "versions.csv"]  # versions: a run that generated records its engine and parser


def test_a_folder_of_runs_keeps_runs_of_one_model_apart(oracle: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(oracle, runs / "a")
    done = _cli("run", "--backend", "oracle", "--model", "Qwen/Qwen3-8B", "--dataset", "sample", "--sessions", "0",
                "--out", str(runs / "b"), "--progress", "none")
    assert done.returncode == 0, done.stderr
    done = _cli("report", str(runs), "--out", str(tmp_path / "r"), "--format", "csv")
    assert done.returncode == 0, done.stderr
    health = _csv(tmp_path / "r" / "health.csv")
    assert [(r["model"], r["tasks"]) for r in health] == [
        (f"Qwen_Qwen3-8B ({runs / 'a'})", "32"), (f"Qwen_Qwen3-8B ({runs / 'b'})", "4")]


def test_a_score_file_path_finds_its_run(oracle: Path, tmp_path: Path) -> None:
    """A score file inside a run directory: the manifest (dataset, model id) and the result file are found."""
    score = oracle / "score" / "Qwen_Qwen3-8B" / SCORE
    done = _cli("report", str(score), "--out", str(tmp_path), "--format", "csv")
    assert done.returncode == 0, done.stderr
    health = _csv(tmp_path / "health.csv")
    assert [(r["model"], r["steps"], r["status"]) for r in health] == [("Qwen_Qwen3-8B", "74", "complete")]
    assert [r["kind"] for r in _csv(tmp_path / "table6.csv")] == ["ours", "paper", "diff", "se", "low", "high", "n"]
