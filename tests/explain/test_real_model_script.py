"""scripts/explain_real_model.py end to end on a tiny model (docs/explain.md, "On a real model"): every run
of `explain --plan` made for real (three transformers seeds, two parser replays, the vLLM engine on CPU,
`--protocol paper`), then `explain` over them. The tiny model's next-token distribution is fixed to the
end-of-turn token, a word or `<tool_call>`, so a reply is empty, a text answer or an unfinished call,
chosen by the sampling seed, and every reply is a few tokens long."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.conftest import chat_template

ROOT = Path(__file__).resolve().parents[2]
# The script makes seven runs (three transformers seeds, two parser replays, the vLLM engine, the paper
# protocol) before `explain` reads them.
pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.timeout(1800)]


def _accuracy(run_dir: Path) -> tuple[float, float]:
    (metric,) = run_dir.glob("score/*/Wild-Tool-Bench_metric.json")
    total = json.loads(metric.read_text(encoding="utf-8"))["total_info"]
    return 100 * total["task"]["accuracy"], 100 * total["session"]["accuracy"]


def test_the_script_runs_the_plan_and_explains_it(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("vllm")
    from tests.helpers import build_tiny_model

    model = build_tiny_model(tmp_path / "model" / "tiny-qwen", chat_template("Qwen/Qwen2.5-7B-Instruct"),
                             special_tokens=["<tool_call>", "</tool_call>"], max_position_embeddings=8192,
                             fixed_logits={"<|im_end|>": 4.0, "Done.": 3.8, "<tool_call>": 3.5})
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WTB_")}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "explain_real_model.py"), str(model), str(out),
                           "--engine", "transformers", "--cpu", "--dataset", "sample", "--sessions", "0",
                           "--max-new-tokens", "16", "--run-timeout", "600"],
                          capture_output=True, text=True, env={**env, "HF_HUB_OFFLINE": "1"}, timeout=1800,
                          check=False)
    assert done.returncode == 0, done.stderr + done.stdout
    runs = out / "runs"
    assert done.stdout.splitlines() == [
        f"note: no template override serves {model}", "base: baseline, 3 seeds ...", "parser-qwen3_coder: parser ...",
        "parser-llama3_json: parser ...", "engine-vllm: engine ...", "protocol-paper: protocol ...",
        f"explanation: {out / 'explain' / 'explain.md'} (the terminal text: {out / 'logs' / 'explain.log'})",
        f"figures: {out / 'figures.md'}"]
    timings = json.loads((out / "timings.json").read_text(encoding="utf-8"))
    assert list(timings) == ["base", "parser-qwen3_coder", "parser-llama3_json", "engine-vllm", "protocol-paper",
                             "explain"]
    plan = (out / "plan.sh").read_text(encoding="utf-8").splitlines()
    assert plan[-1] == (f"python -m wtb_local explain {runs}/base {runs}/parser-qwen3_coder {runs}/parser-llama3_json "
                        f"{runs}/engine-vllm {runs}/protocol-paper --out {out}/explain")

    data = json.loads((out / "explain" / "explain.json").read_text(encoding="utf-8"))
    labels = [run["label"] for run in data["runs"]]
    base = [f"{runs}/base/repeats/{r}" for r in range(3)]
    assert labels == [*base, *(f"{runs}/{name}" for name in ("parser-qwen3_coder", "parser-llama3_json",
                                                             "engine-vllm", "protocol-paper"))]
    assert (data["tasks"], data["sessions"]) == (4, 1)
    for run in data["runs"]:  # the accuracies are the metric files'
        assert (run["task_accuracy"], run["session_accuracy"]) == _accuracy(Path(run["label"]))
    values = {f["name"]: f["values"] for f in data["factors"]}

    def differ(a: str, b: str) -> list[str]:
        return [name for name, by_run in values.items() if by_run[a] != by_run[b]]

    assert differ(base[0], base[1]) == ["seed"]
    assert differ(base[0], labels[3]) == differ(base[0], labels[4]) == ["parser"]
    assert differ(base[0], labels[5]) == ["engine", "engine version"]
    assert {"protocol", "parser", "checker"} <= set(differ(base[0], labels[6]))
    assert values["engine"][labels[5]] == "vllm" and values["dtype / quantization"][labels[5]] == "float32"
    # each waterfall adds up to its gap; a parser replay's whole gap is the parser's
    decompositions = {Path(d["b"]).name: d for d in data["decompositions"]}
    assert list(decompositions) == ["parser-qwen3_coder", "parser-llama3_json", "engine-vllm", "protocol-paper"]
    for item in decompositions.values():
        assert sum(p["task_correct"] for p in item["parts"]) == round((item["task"]["b"] - item["task"]["a"]) * 4 / 100)
    for name in ("parser-qwen3_coder", "parser-llama3_json"):
        parser, checker, generation = decompositions[name]["parts"]
        assert (checker["task_correct"], generation["task_correct"], generation["tasks_changed"]) == (0, 0, 0)
        assert parser["how"].startswith(f"{base[0]}'s raw completions replayed through {name.split('-', 1)[1]}")
    # where the pairs part: seeds and engines at the completion, the paper protocol at the conversation,
    # a replay at the parse
    stages = {(Path(p["a"]).name, Path(p["b"]).name): {(f["stage"], tuple(f["factors"])) for f in p["flipped"]}
              for p in data["pairs"]}
    assert stages[("0", "1")] <= {("completion", ("seed",))} and stages[("0", "2")] <= {("completion", ("seed",))}
    assert stages[("0", "engine-vllm")] <= {("completion", ("engine", "engine version"))}
    assert {stage for stage, _ in stages[("0", "protocol-paper")]} <= {"prompt"}
    assert stages[("0", "parser-llama3_json")] <= {("parse", ("parser",))}
    (seeds,) = data["seeds"]
    assert seeds["runs"] == base and seeds["task_accuracy"]["values"] == [
        run["task_accuracy"] for run in data["runs"][:3]]
    for name in ("explain.md", "explain.html", "waterfall.csv", "seeds.csv", "plots/waterfall.png"):
        assert (out / "explain" / name).is_file(), name
    flips = sum(len(pair["flipped"]) for pair in data["pairs"])
    assert (out / "explain" / "flips.csv").is_file() == (flips > 0)

    # the figures: one row per run, in the plan's order, named under runs/; the page gets them between its marks
    figures = json.loads((out / "figures.json").read_text(encoding="utf-8"))
    names = [*(f"base/repeats/{r}" for r in range(3)), "parser-qwen3_coder", "parser-llama3_json", "engine-vllm",
             "protocol-paper"]
    assert [row["run"] for row in figures["runs"]] == names
    for row, run in zip(figures["runs"], data["runs"], strict=True):
        assert (row["task"], row["session"]) == (run["task_accuracy"], run["session_accuracy"])
    assert figures["runs"][0]["same_conversation"] == figures["runs"][0]["same_completion"] == \
        figures["runs"][0]["steps"]  # the baseline against itself
    block = (out / "figures.md").read_text(encoding="utf-8")
    assert [line.split(" | ")[0] for line in block.splitlines() if line.startswith("| `")][:len(names)] == \
        [f"| `{name}`" for name in names]
    page = tmp_path / "page.md"
    page.write_text("# A page\n\nbefore\n<!-- figures: made by scripts/explain_real_model.py --figures-from OUT_DIR "
                    "--page; begin -->\nold\n<!-- figures: end -->\nafter\n", encoding="utf-8")
    again = subprocess.run([sys.executable, str(ROOT / "scripts" / "explain_real_model.py"), "--figures-from", str(out),
                            "--page", str(page), "--plot", str(tmp_path / "waterfall.png")],
                           capture_output=True, text=True, env=env, timeout=600, check=False)
    assert again.returncode == 0, again.stderr
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# A page\n\nbefore\n<!-- figures:") and text.endswith("<!-- figures: end -->\nafter\n")
    assert "old" not in text and (tmp_path / "waterfall.png").is_file()
    assert "](waterfall.png)" in text  # the plot, linked relative to the page
