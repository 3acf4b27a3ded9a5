"""`explain` on recorded runs (docs/explain.md): a parser-only and a checker-only difference are attributed
wholly to that factor, seed repeats give the spread, and each flipped task's first point of divergence is
the stage where the two runs part (prompt, completion, parse, verdict)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

from tests.explain.conftest import cli
from wtb_local.analysis.commands.repeat_runs import mean_and_stderr, repeat_seed
from wtb_local.analysis.explain.build import explain_runs
from wtb_local.analysis.explain.divergence import first_divergence
from wtb_local.analysis.explain.runs import load_run, runs_to_explain
from wtb_local.run.job import replay_run


def _explain(*paths: Path) -> dict:
    return explain_runs(runs_to_explain([str(p) for p in paths]), replay_run)


def _differing(data: dict) -> list[str]:
    return [f["name"] for f in data["factors"] if f["differ"]]


def _parts(data: dict, index: int = 0) -> list[tuple]:
    return [(p["part"], p["task_correct"], p["session_correct"], p["tasks_changed"], p["factors"])
            for p in data["decompositions"][index]["parts"]]


def _metric_accuracy(run_dir: Path, model: str) -> tuple[float, float]:
    metric = json.loads((run_dir / "score" / model / "Wild-Tool-Bench_metric.json").read_text(encoding="utf-8"))
    total = metric["total_info"]
    return 100 * total["task"]["accuracy"], 100 * total["session"]["accuracy"]


def test_a_parser_only_difference_is_wholly_the_parser(parser_runs: tuple[Path, Path]) -> None:
    """The oracle's Hermes calls, and the same completions replayed through the pythonic parser."""
    oracle, pythonic = parser_runs
    data = _explain(oracle, pythonic)
    assert _differing(data) == ["parser"]  # a replay's generation factors are the replayed run's
    assert (data["tasks"], data["sessions"], data["notes"]) == (32, 8, [])
    item = data["decompositions"][0]
    assert (item["task"], item["session"]) == ({"a": 100.0, "b": 15.625}, {"a": 100.0, "b": 0.0})
    # the metric files say the same
    assert (item["task"]["b"], item["session"]["b"]) == _metric_accuracy(pythonic, "Qwen_Qwen3-8B")
    assert _parts(data) == [("parser", -27, -8, 27, ["parser"]), ("checker", 0, 0, 0, []),
                            ("generation", 0, 0, 0, [])]
    assert [p["task"] for p in item["parts"]] == [-84.375, 0.0, 0.0]
    assert item["parts"][2]["how"] == "the same completions: nothing left"
    pair = data["pairs"][0]
    assert (pair["flips"], pair["only_a"], pair["only_b"]) == (27, 27, 0)
    assert pair["stages"] == {"prompt": 0, "completion": 0, "parse": 27, "verdict": 0}
    assert pair["p_tasks"] == 2 / 2**27 and pair["p_sessions"] == 2 / 2**8 and pair["beyond_noise"] is True
    assert {(f["stage"], tuple(f["factors"]), f["detail"]) for f in pair["flipped"]} == {
        ("parse", ("parser",), "the same completion, other parsed calls, text")}
    assert {f["step"] for f in pair["flipped"]} == {0, 1}


def test_the_steps_a_parser_leads_to_are_the_parsers_in_generation(parser_runs: tuple[Path, Path]) -> None:
    """From the pythonic replay (no call read, so no later step recorded) to the oracle run (Hermes calls
    read, then the reply after them generated): the re-parse reads the calls but reaches steps the first
    run never generated; the second run generated them because its parser read the calls, so the rest is
    the parser's, not the engine's nondeterminism (no generation factor differs)."""
    oracle, pythonic = parser_runs
    data = _explain(pythonic, oracle)
    assert _differing(data) == ["parser"]
    assert _parts(data) == [("parser", 0, 0, 0, ["parser"]), ("checker", 0, 0, 0, []),
                            ("generation", 27, 8, 27, ["parser"])]
    parser, _, generation = data["decompositions"][0]["parts"]
    assert parser["note"] == (f"27 task(s) reached a step {pythonic} never recorded (the parse led the "
                              "conversation elsewhere): errors, as in a replay run")
    assert generation["how"] == (f"new completions for the steps {oracle}'s parser led the conversation to, "
                                 f"which {pythonic} never generated (27 task(s))")
    assert data["pairs"][0]["stages"] == {"prompt": 0, "completion": 0, "parse": 27, "verdict": 0}


def test_a_checker_only_difference_is_wholly_the_checker(checker_runs: tuple[Path, Path]) -> None:
    """The scripted vectors run and `rescore --checker lenient` of it (RUN_DIR/score-lenient)."""
    strict, lenient = checker_runs
    data = _explain(strict, lenient)
    assert _differing(data) == ["checker"]
    assert (data["tasks"], data["sessions"]) == (256, 64)
    item = data["decompositions"][0]
    assert (item["task"], item["session"]) == ({"a": 53.125, "b": 56.25}, {"a": 4.6875, "b": 6.25})
    assert (item["task"]["b"], item["session"]["b"]) == _metric_accuracy(lenient, "scripted")
    assert _parts(data) == [("parser", 0, 0, 0, []), ("checker", 8, 1, 8, ["checker"]),
                            ("generation", 0, 0, 0, [])]
    assert item["parts"][1]["how"] == "the same result rows re-scored with the lenient checker"
    pair = data["pairs"][0]
    assert (pair["flips"], pair["only_a"], pair["only_b"], pair["p_tasks"]) == (8, 0, 8, 0.0078125)
    # the errors every command shows (docs/reports.md "Uncertainty"): the strict run's task accuracy as
    # `report` prints it (±2.97, 47-59), and the gap's paired error clustered by session: the 8 flips sit
    # in 8 sessions, so d = 1 in 8 of 64 sessions: se = sqrt(64/63 * (8 * 0.875^2 + 56 * 0.125^2)) / 256 = 1/96
    strict_run = data["runs"][0]
    assert (round(strict_run["task_se"], 2), round(strict_run["task_low"]), round(strict_run["task_high"])) == (
        2.97, 47, 59)
    assert math.isclose(pair["task_gap_se"], 100 / 96, abs_tol=1e-9) and pair["beyond_noise_clustered"] is True
    assert (round(pair["task_gap_low"], 2), round(pair["task_gap_high"], 2)) == (1.08, 5.17)
    assert [f["task"] for f in pair["flipped"]] == [
        "wild_tool_bench_7/0", "wild_tool_bench_11/1", "wild_tool_bench_15/3", "wild_tool_bench_28/0",
        "wild_tool_bench_40/0", "wild_tool_bench_48/1", "wild_tool_bench_52/0", "wild_tool_bench_59/1"]
    assert {(f["stage"], f["step"], tuple(f["factors"]), f["detail"]) for f in pair["flipped"]} == {
        ("verdict", None, ("checker",), "the same calls at every step, another task verdict")}
    # the other way round: the gap and every part change sign
    back = _explain(lenient, strict)
    assert _parts(back) == [("parser", 0, 0, 0, []), ("checker", -8, -1, 8, ["checker"]),
                            ("generation", 0, 0, 0, [])]


def test_seed_repeats_give_the_spread_and_gaps_are_tested_against_it(seed_runs: tuple[Path, Path, Path]) -> None:
    seeds, same, other = seed_runs
    data = _explain(seeds, same, other)
    summary = json.loads((seeds / "repeats.json").read_text(encoding="utf-8"))
    (group,) = data["seeds"]
    assert group["seeds"] == ["0", str(repeat_seed(0, 1)), str(repeat_seed(0, 2))] == [str(s) for s in summary["seeds"]]
    assert group["task_accuracy"]["values"] == [3.125, 0.0, 9.375] == [100 * v for v in summary["task_accuracy"]["values"]]
    assert (group["task_accuracy"]["mean"], group["task_accuracy"]["stderr"]) == mean_and_stderr([3.125, 0.0, 9.375])
    assert math.isclose(group["task_accuracy"]["mean"], 100 * summary["task_accuracy"]["mean"])
    assert group["session_accuracy"] == {"mean": 0.0, "stderr": 0.0, "values": [0.0, 0.0, 0.0]}
    assert (group["flip_rate"], group["pairwise_flip_rate"]) == (3 / 32, 6 / 96)  # 3 tasks; 1 + 2 + 3 flips
    assert _differing(data) == ["template", "seed"]
    pairs = {(Path(p["a"]).name, Path(p["b"]).name): p for p in data["pairs"]}
    assert [(k, p["flips"], p["seed_pair"], p["stages"]["prompt"], p["stages"]["completion"])
            for k, p in pairs.items()] == [
        (("0", "1"), 1, True, 0, 1), (("0", "2"), 2, True, 0, 2), (("0", "same-prompts"), 0, False, 0, 0),
        (("0", "other-prompts"), 2, False, 2, 0), (("1", "2"), 3, True, 0, 3), (("1", "same-prompts"), 1, False, 0, 1),
        (("1", "other-prompts"), 3, False, 3, 0), (("2", "same-prompts"), 2, False, 0, 2),
        (("2", "other-prompts"), 0, False, 0, 0), (("same-prompts", "other-prompts"), 2, False, 2, 0)]
    # two seeds part at the completion: the same prompt, another reply (or the server refused one)
    assert [(f["task"], f["stage"], f["step"], f["factors"], f["detail"]) for f in pairs[("0", "2")]["flipped"]] == [
        ("wild_tool_bench_3/2", "completion", 0, ["seed"], "the same prompt, another completion"),
        ("wild_tool_bench_5/3", "completion", 0, ["seed"], "the same prompt, another completion")]
    refused = pairs[("0", "1")]["flipped"][0]
    assert (refused["stage"], refused["factors"]) == ("completion", ["seed"])
    assert refused["detail"].startswith(f"the same prompt, the request was not served in {seeds}/repeats/1: "
                                        "prompt too long: HTTP 400 from /completions: This model's maximum "
                                        "context length is 8192 tokens.")
    # a template that renders other prompts parts at the prompt; one that renders the same prompts does not
    # (the prompts are rendered again from the manifests), so there the seed is the cause
    assert [(f["task"], f["stage"], f["factors"], f["detail"]) for f in pairs[("0", "other-prompts")]["flipped"]] == [
        (task, "prompt", ["template"], ("the same messages render to other prompts (re-rendered from the "
                                        "manifests); then another completion")) for task in ("wild_tool_bench_3/2", "wild_tool_bench_5/3")]
    assert [(f["stage"], f["factors"], f["detail"]) for f in pairs[("2", "same-prompts")]["flipped"]] == [
        ("completion", ["seed"], ("the same prompt, another completion (template differs but the prompts are "
                                  "the same, re-rendered from the manifests)"))] * 2
    assert all(p["p_tasks"] >= 0.25 and p["beyond_noise"] is False for p in data["pairs"])
    assert all(p["seed_flip_rate"] == 6 / 96 for p in data["pairs"])
    # the waterfalls start at the first seed and skip the other seeds of its group
    assert [(Path(d["a"]).name, Path(d["b"]).name) for d in data["decompositions"]] == [
        ("0", "same-prompts"), ("0", "other-prompts")]
    assert _parts(data, 1) == [("parser", 0, 0, 0, []), ("checker", 0, 0, 0, []),
                               ("generation", 2, 0, 2, ["template"])]


def test_first_divergence_of_the_paper_protocol_is_the_conversation(parser_runs: tuple[Path, Path],
                                                                    paper_run: Path) -> None:
    oracle, paper = load_run(parser_runs[0]), load_run(paper_run)
    divergence = first_divergence(oracle, paper, ("wild_tool_bench_0", 0))
    assert (divergence.stage, divergence.step, divergence.detail) == (
        "prompt", 0, "the conversation sent (messages, tools) differs")
    assert divergence.factors == ("protocol",)


def test_a_completion_that_differs_with_no_factor_is_the_engines_own(parser_runs: tuple[Path, Path],
                                                                     tmp_path: Path) -> None:
    oracle = parser_runs[0]
    copy = tmp_path / "copy"
    shutil.copytree(oracle, copy)
    result = copy / "result" / "Qwen_Qwen3-8B" / "Wild-Tool-Bench_result.jsonl"
    rows = [json.loads(line) for line in result.read_text(encoding="utf-8").splitlines()]
    rows[0]["result"][0]["inference_log"]["step_0"]["inference_output"]["raw"] += " "
    result.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    divergence = first_divergence(load_run(oracle), load_run(copy), ("wild_tool_bench_0", 0))
    assert (divergence.stage, divergence.step, divergence.factors) == ("completion", 0, ())
    assert divergence.detail == ("the same prompt, another completion: no recorded factor differs (the engine's "
                                 "own nondeterminism: batching, hardware)")


def test_the_command_prints_and_writes_every_format(parser_runs: tuple[Path, Path], tmp_path: Path) -> None:
    oracle, pythonic = parser_runs
    out = tmp_path / "out"
    done = cli("explain", str(oracle), str(pythonic), "--out", str(out))
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert lines[0] == "Runs compared (32 tasks, 8 whole sessions)"
    assert lines[-1] == f"explain: 10 file(s) in {out}"
    assert "note: 17 more flipped task(s) in flips.csv and explain.json (--out)." in lines
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "explain.html", "explain.json", "explain.md", "factors_differ.csv", "factors_equal.csv", "flips.csv",
        "pairs.csv", "plots/waterfall.png", "runs.csv", "waterfall.csv"]
    data = json.loads((out / "explain.json").read_text(encoding="utf-8"))
    assert data["decompositions"][0]["parts"][0]["task_correct"] == -27
    assert len(data["pairs"][0]["flipped"]) == 27
    flips = (out / "flips.csv").read_text(encoding="utf-8").splitlines()
    assert flips[0] == "run,kind,b,task,verdicts,stage,step,factors,detail" and len(flips) == 28
    waterfall = (out / "waterfall.csv").read_text(encoding="utf-8").splitlines()
    assert [line.split(",")[0] for line in waterfall] == ["step", str(oracle), "+ parser", "+ checker",
                                                          "+ generation", str(pythonic)]
    assert waterfall[2].split(",")[2:5] == ["-84.3750", "-100.0000", "27"]
    html = (out / "explain.html").read_text(encoding="utf-8")
    assert "<title>WildToolBench: why the numbers differ</title>" in html
    assert 'src="data:image/png;base64,' in html and "<th>factor</th>" in html
    markdown = (out / "explain.md").read_text(encoding="utf-8")
    assert markdown.startswith("# WildToolBench: why the numbers differ\n")
    assert "![waterfall.png](plots/waterfall.png)" in markdown
    assert (out / "plots" / "waterfall.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    only_json = tmp_path / "json"
    assert cli("explain", str(oracle), str(pythonic), "--out", str(only_json), "--format", "json").exit_code == 0
    assert sorted(p.name for p in only_json.iterdir()) == ["explain.json"]


def test_what_explain_refuses(parser_runs: tuple[Path, Path], tmp_path: Path) -> None:
    oracle, _ = parser_runs
    one = cli("explain", str(oracle))
    assert one.exit_code == 1 and one.output.strip() == (
        "Error: explain compares runs: give at least two run directories (or one --repeats run directory of "
        "two or more seeds)")
    twice = cli("explain", str(oracle), str(oracle))
    assert twice.exit_code == 1 and twice.output.strip() == f"Error: {oracle}: given twice; name each run once"
    (tmp_path / "empty").mkdir()
    bare = cli("explain", str(oracle), str(tmp_path / "empty"))
    assert bare.exit_code == 1 and bare.output.strip().startswith(f"Error: {tmp_path / 'empty'}: no readable manifest.json")
    both = cli("explain", str(oracle), "--plan", "Qwen/Qwen3-8B")
    assert both.exit_code == 2 and "--plan MODEL takes no RUN_DIR" in both.output


def test_explain_imports_no_engine(parser_runs: tuple[Path, Path]) -> None:
    """A re-parse replays recorded completions: no torch, vLLM or transformers is imported."""
    import subprocess
    import sys

    oracle, pythonic = parser_runs
    code = ("import sys, io, contextlib; from wtb_local.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['explain', sys.argv[1], sys.argv[2]])\n    except SystemExit as exc:\n"
            "        assert not exc.code, exc.code\n"
            "print(sorted(m for m in ('torch', 'vllm', 'transformers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, str(oracle), str(pythonic)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
