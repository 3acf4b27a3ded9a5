"""`rosters/2026.toml` (docs/roster.md §6): the file loads, every entry names its sources, and `plan` (the real
CLI, offline, empty Hugging Face cache) decides each row's parser, template source, protocol, thinking
switch, context and memory exactly; every row says it has no paper row; the sbatch lines of its submission.

`test_the_2026_roster_plans_without_error` needs every 2026 family's parser in the registry (DeepSeek-V3.2/V4,
GLM-4.7/5.x, Kimi-K3, MiniMax-M3, LongCat, Hy3, Cohere Command, GigaChat3, Poolside): without them its rows
are errors ("no tool-call parser matches") and the test says which."""

from __future__ import annotations

import re
from pathlib import Path

from tests.roster.conftest import ROOT, wtb

ROSTER_2026 = ROOT / "rosters" / "2026.toml"
HEADERS = ("row", "model", "resources", "params", "parser", "template", "protocol family", "thinking", "context",
           "memory GiB (w + kv / usable)", "status")

# Every row's resources, parameters (from the roster: nothing is cached), context and memory estimate; these
# depend on the roster and plan/memory.py only. H200: 0.9 x 140.4 GiB = 126.4 GiB usable per GPU.
SIZES = {
    "Qwen3.6-27B": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "27.78B (roster)", "51.7 + 32.0 / 126.4"),
    "Qwen3.6-35B-A3B": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "35.00B (roster)", "65.2 + 10.0 / 126.4"),
    "Qwen3.5-397B-A17B": ("gpu8 (1x8 H200 141GB, tp8 pp1)", "397.00B (roster)", "739.5 + 60.0 / 1010.9"),
    "DeepSeek-V3.2": ("gpu8 (1x8 H200 141GB, tp8 pp1)", "671.00B (roster)", "624.9 + 68.6 / 1010.9"),
    "DeepSeek-V4-Flash-0731": ("gpu2 (1x2 H200 141GB, tp2 pp1)", "284.00B (roster)", "132.2 + ? / 252.7"),
    "GLM-4.7": ("gpu4 (1x4 H200 141GB, tp4 pp1)", "358.00B (roster)", "333.4 + 46.0 / 505.4"),
    "GLM-5.2": ("gpu8 (1x8 H200 141GB, tp8 pp1)", "743.00B (roster)", "692.0 + ? / 1010.9"),
    "Kimi-K2.5": ("gpu8 (1x8 H200 141GB, tp8 pp1)", "1000.00B (roster)", "465.7 + 68.6 / 1010.9"),
    "Kimi-K3": ("gpu8 (1x8 H200 141GB, tp8 pp1)", "1000.00B (roster)", "465.7 + ? / 1010.9"),
    "MiniMax-M3": ("gpu8 (1x8 H200 141GB, tp8 pp1)", "428.00B (roster)", "797.2 + ? / 1010.9"),
    "Gemma-4-31B-it": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "30.70B (roster)", "57.2 + 120.0 / 126.4"),
    "Gemma-4-26B-A4B-it": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "25.20B (roster)", "46.9 + 30.0 / 126.4"),
    "FunctionGemma-270M-it": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "0.27B (roster)", "0.5 + 2.2 / 126.4"),
    "Olmo-3.1-32B-Instruct": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "32.23B (roster)", "60.0 + 32.0 / 126.4"),
    "Apertus-70B-Instruct-2509": ("gpu2 (1x2 H200 141GB, tp2 pp1)", "70.00B (roster)", "130.4 + ? / 252.7"),
    "Nemotron-3-Nano-30B-A3B": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "30.00B (roster)", "55.9 + ? / 126.4"),
    "Nemotron-3-Super-120B-A12B": ("gpu2 (1x2 H200 141GB, tp2 pp1)", "120.00B (roster)", "111.8 + ? / 252.7"),
    "ERNIE-4.5-21B-A3B-Thinking": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "21.80B (roster)", "40.6 + ? / 126.4"),
    "LongCat-Flash-Chat": ("gpu8 (1x8 H200 141GB, tp8 pp1)", "560.00B (roster)", "521.5 + ? / 1010.9"),
    "Granite-4.0-H-Small": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "32.00B (roster)", "59.6 + ? / 126.4"),
    "Step-3.5-Flash": ("gpu4 (1x4 H200 141GB, tp4 pp1)", "196.00B (roster)", "365.1 + ? / 505.4"),
    "Hy3-preview": ("gpu8 (1x8 H200 141GB, tp8 pp1)", "295.00B (roster)", "549.5 + 40.0 / 1010.9"),
    "LFM2.5-8B-A1B": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "8.30B (roster)", "15.5 + ? / 126.4"),
    "Command-A-Reasoning": ("gpu2 (1x2 H200 141GB, tp2 pp1)", "111.00B (roster)", "206.8 + ? / 252.7"),
    "GigaChat3-10B-A1.8B": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "10.00B (roster)", "18.6 + ? / 126.4"),
    "MiniCPM5-1B": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "1.08B (roster)", "2.0 + ? / 126.4"),
    "Laguna-XS.2": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "33.40B (roster)", "62.2 + ? / 126.4"),
    # second half of 2026
    "Muse-Glimmer-30B": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "30.00B (roster)", "55.9 + ? / 126.4"),
    "K2-Horizon-32B": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "32.00B (roster)", "59.6 + ? / 126.4"),
    "DeepSeek-V4.1-Flash": ("gpu2 (1x2 H200 141GB, tp2 pp1)", "284.00B (roster)", "132.2 + ? / 252.7"),
    "Granite-4.2-8B": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "8.00B (roster)", "14.9 + ? / 126.4"),
    "MiMo-V2.5": ("gpu8 (1x8 H200 141GB, tp8 pp1)", "310.00B (roster)", "577.4 + ? / 1010.9"),
    "ZAYA1-8B": ("gpu1 (1x1 H200 141GB, tp1 pp1)", "8.00B (roster)", "14.9 + ? / 126.4"),
    "Intern-S1": ("gpu4 (1x4 H200 141GB, tp4 pp1)", "241.00B (roster)", "448.9 + ? / 505.4"),
    "GigaChat3.5-432B-A28B": ("gpu8 (1x8 H200 141GB, tp8 pp1)", "432.00B (roster)", "804.7 + ? / 1010.9"),
}

# The parser each row's run reads replies with, chosen from the model id as vLLM's recipes serve the model
# (docs/parsers-and-templates.md).
PARSERS = {
    "Qwen3.6-27B": "qwen3_coder", "Qwen3.6-35B-A3B": "qwen3_coder", "Qwen3.5-397B-A17B": "qwen3_coder",
    "DeepSeek-V3.2": "deepseek_v32", "DeepSeek-V4-Flash-0731": "deepseek_v4", "GLM-4.7": "glm47",
    "GLM-5.2": "glm47", "Kimi-K2.5": "kimi_k2", "Kimi-K3": "kimi_k3", "MiniMax-M3": "minimax_m3",
    "Gemma-4-31B-it": "gemma4", "Gemma-4-26B-A4B-it": "gemma4", "FunctionGemma-270M-it": "functiongemma",
    "Olmo-3.1-32B-Instruct": "olmo3", "Apertus-70B-Instruct-2509": "apertus",
    "Nemotron-3-Nano-30B-A3B": "qwen3_coder", "Nemotron-3-Super-120B-A12B": "qwen3_xml",
    "ERNIE-4.5-21B-A3B-Thinking": "ernie45", "LongCat-Flash-Chat": "longcat", "Granite-4.0-H-Small": "granite4",
    "Step-3.5-Flash": "step3p5", "Hy3-preview": "hy_v3", "LFM2.5-8B-A1B": "lfm2",
    "Command-A-Reasoning": "cohere_command", "GigaChat3-10B-A1.8B": "gigachat3", "MiniCPM5-1B": "minicpm5",
    "Laguna-XS.2": "poolside_v1",
    "DeepSeek-V4.1-Flash": "deepseek_v41", "Granite-4.2-8B": "granite42", "MiMo-V2.5": "mimo", "ZAYA1-8B": "zaya",
    "Intern-S1": "internlm", "GigaChat3.5-432B-A28B": "gigachat35",
}

# the second half's rows of Muse Glimmer and K2 Horizon
H2_ROWS = {"Muse-Glimmer-30B": "muse_glimmer", "K2-Horizon-32B": "k2_horizon"}

NO_KV = "no KV cache estimate: set config.layers, kv_heads and head_dim (or cache config.json)"
# The rows whose parser, template and thinking switch need no family beyond those of the paper and of
# Gemma/Qwen3.5/Olmo/Apertus/Nemotron/ERNIE/Granite/Step/LFM2/MiniCPM: (template, thinking, status, messages).
DECIDED = {
    "Qwen3.6-27B": ("needs the tokenizer", "enable_thinking=true", "ok", []),
    "Qwen3.6-35B-A3B": ("needs the tokenizer", "enable_thinking=true", "ok", []),
    "Qwen3.5-397B-A17B": ("needs the tokenizer", "enable_thinking=true", "ok", []),
    "Kimi-K2.5": ("needs the tokenizer", "default", "ok", []),
    "Gemma-4-31B-it": ("needs the tokenizer", "enable_thinking=true", "warning",
                       [("warning: KV cache for the planned batch (32 x 4096 tokens, 120.0 GiB) exceeds the 69.2 GiB "
                        "left after the weights: vLLM batches fewer sequences")]),
    "Gemma-4-26B-A4B-it": ("needs the tokenizer", "enable_thinking=true", "ok", []),
    "FunctionGemma-270M-it": ("needs the tokenizer", "default", "ok", []),
    "Olmo-3.1-32B-Instruct": ("needs the tokenizer", "default", "ok", []),
    "Apertus-70B-Instruct-2509": ("needs the tokenizer (fallback: override:apertus)", "enable_thinking=true",
                                  "warning", [f"warning: {NO_KV}"]),
    "Nemotron-3-Nano-30B-A3B": ("needs the tokenizer", "enable_thinking=true", "warning", [f"warning: {NO_KV}"]),
    "Nemotron-3-Super-120B-A12B": ("needs the tokenizer", "enable_thinking=true", "warning", [f"warning: {NO_KV}"]),
    "ERNIE-4.5-21B-A3B-Thinking": ("needs the tokenizer", "default", "warning", [f"warning: {NO_KV}"]),
    "Granite-4.0-H-Small": ("needs the tokenizer", "default", "warning", [f"warning: {NO_KV}"]),
    "Step-3.5-Flash": ("needs the tokenizer", "default", "warning", [f"warning: {NO_KV}"]),
    "LFM2.5-8B-A1B": ("needs the tokenizer (fallback: override:lfm2_5)", "default", "warning", [f"warning: {NO_KV}"]),
    "MiniCPM5-1B": ("needs the tokenizer", "enable_thinking=true", "warning", [f"warning: {NO_KV}"]),
}


def _plan_rows(text: str) -> dict[str, tuple[dict[str, str], list[str]]]:
    """The plan's table: row -> (its cells by header, the lines under it). Cells are separated by two or more
    spaces; no cell holds two spaces in a row."""
    lines = text.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == list(HEADERS)
    rows: dict[str, tuple[dict[str, str], list[str]]] = {}
    last = ""
    for line in lines[1:-1]:
        if line.startswith("    "):
            rows[last][1].append(line.strip())
            continue
        cells = re.split(r"\s{2,}", line)
        assert len(cells) == len(HEADERS), line
        last = cells[0]
        rows[last] = (dict(zip(HEADERS, cells, strict=True)), [])
    return rows


def _plan(tmp_path: Path, *args: str):
    return wtb("plan", str(ROSTER_2026), *args, hf_home=tmp_path / "hf")


def test_the_2026_roster_loads_with_a_source_for_every_entry() -> None:
    from wtb_local.analysis.roster.file import load_roster

    roster = load_roster(ROSTER_2026)
    assert roster.compare_with == "none"
    assert [e.row for e in roster.entries] == list(SIZES)
    assert {e.protocol for e in roster.entries} == {"release"}
    assert {e.max_model_len for e in roster.entries} == {32768}
    assert sorted(roster.resources) == ["gpu1", "gpu2", "gpu4", "gpu8"]
    assert all(e.why for e in roster.entries)
    # every [[entry]] follows a comment naming where its numbers come from (a URL, or the code search index)
    text = ROSTER_2026.read_text(encoding="utf-8")
    blocks = text.split("[[entry]]")[1:]
    heads = text.split("[[entry]]")[:-1]
    assert len(blocks) == len(SIZES)
    for head, block in zip(heads, blocks):
        row = re.search(r'^row = "([^"]+)"', block, re.MULTILINE).group(1)
        comment = head.rstrip().rsplit("\n\n", 1)[-1]
        assert comment.startswith("#") and ("https://" in comment or "http://" in comment
                                             or "code search index" in comment), row


def test_every_row_plans_its_size_and_no_paper_row(tmp_path: Path) -> None:
    proc = _plan(tmp_path)
    rows = _plan_rows(proc.stdout)
    assert list(rows) == list(SIZES)
    for row, (resources, params, memory) in SIZES.items():
        cells, messages = rows[row]
        assert (cells["resources"], cells["params"], cells["context"], cells["memory GiB (w + kv / usable)"]) == (
            resources, params, "32768 (roster)", memory), row
        assert messages[0] == "note: no paper row", row
    # a roster compared with no paper table is not told which paper rows it lacks
    summary = next(line for line in proc.stdout.splitlines() if line.startswith(f"{len(SIZES)} entries: "))
    assert summary.endswith("; 35 without a paper row (compare_with = 'none')")
    assert "open-weight rows" not in proc.stdout and "rows without an entry" not in proc.stdout


def test_rows_of_the_families_decided_here_plan_exactly(tmp_path: Path) -> None:
    rows = _plan_rows(_plan(tmp_path).stdout)
    for row, (template, thinking, status, messages) in DECIDED.items():
        cells, lines = rows[row]
        assert (cells["parser"], cells["template"], cells["protocol family"], cells["thinking"],
                cells["status"]) == (PARSERS[row], template, "release", thinking, status), row
        assert lines == ["note: no paper row", *messages], row


def test_the_2026_roster_plans_without_error(tmp_path: Path) -> None:
    """Every row resolves: its parser (the vLLM-named parser of its family) and thinking switch."""
    proc = _plan(tmp_path)
    rows = _plan_rows(proc.stdout)
    errors = {row: [m for m in lines if m.startswith("error")] for row, (_, lines) in rows.items()}
    errors = {row: lines for row, lines in errors.items() if lines}
    parsers = {row: cells["parser"] for row, (cells, _) in rows.items()}
    assert errors == {}
    assert parsers == {**PARSERS, **H2_ROWS}
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == ("35 entries: 10 ok, 25 warning, 0 error; 35 without a paper row "
                                           "(compare_with = 'none')")
    submitted = _plan(tmp_path, "--submit", "--dry-run", "--runs-dir", str(tmp_path / "runs"),
                      "--sbatch-option=--partition=gpu")
    assert submitted.returncode == 0, submitted.stderr
    assert submitted.stdout.splitlines()[-5:] == _sbatch_lines(tmp_path / "runs")


def _sbatch_lines(runs: Path) -> list[str]:
    roster, slurm = ROSTER_2026, ROOT / "slurm"
    arrays = [("GPU1", "gpu1", ("Qwen3.6-27B Qwen3.6-35B-A3B Gemma-4-31B-it Gemma-4-26B-A4B-it FunctionGemma-270M-it "
                                "Olmo-3.1-32B-Instruct Nemotron-3-Nano-30B-A3B ERNIE-4.5-21B-A3B-Thinking "
                                "Granite-4.0-H-Small LFM2.5-8B-A1B GigaChat3-10B-A1.8B MiniCPM5-1B Laguna-XS.2 "
                                "Muse-Glimmer-30B K2-Horizon-32B Granite-4.2-8B ZAYA1-8B"), 16, 1),
              ("GPU8", "gpu8", ("Qwen3.5-397B-A17B DeepSeek-V3.2 GLM-5.2 Kimi-K2.5 Kimi-K3 MiniMax-M3 "
                                "LongCat-Flash-Chat Hy3-preview MiMo-V2.5 GigaChat3.5-432B-A28B"), 9, 8),
              ("GPU2", "gpu2", ("DeepSeek-V4-Flash-0731 Apertus-70B-Instruct-2509 Nemotron-3-Super-120B-A12B "
                               "Command-A-Reasoning DeepSeek-V4.1-Flash"), 4, 2),
              ("GPU4", "gpu4", "GLM-4.7 Step-3.5-Flash Intern-S1", 2, 4)]
    lines = [f"JOB_{var}=$(WTB_ROSTER={roster} WTB_ROSTER_ROWS='{rows}' WTB_RUNS_DIR={runs} sbatch --parsable "
             f"--job-name=wtb_roster_{name} --array=0-{last} --nodes=1 --gpus={gpus} --partition=gpu "
             f"{slurm}/wtb_roster.sbatch)" for var, name, rows, last, gpus in arrays]
    lines.append(f"WTB_ROSTER={roster} WTB_RUNS_DIR={runs} sbatch --parsable --job-name=wtb_roster_report "
                 "--partition=gpu --dependency=afterany:${JOB_GPU1}:${JOB_GPU8}:${JOB_GPU2}:${JOB_GPU4} "
                 f"{slurm}/wtb_roster_report.sbatch")
    return lines


def test_the_2026_submission_is_four_arrays_and_the_report(tmp_path: Path) -> None:
    """What `plan --submit --dry-run` prints once the plan has no error: one single-node array per class
    (no entry needs two nodes of H200s), then the report job after all of them; an array task runs its row
    as `run --protocol release` with the row's thinking switch."""
    from wtb_local.analysis.roster.file import load_roster
    from wtb_local.analysis.roster.submit import entry_run_arguments, roster_jobs, submit_jobs

    roster = load_roster(ROSTER_2026)
    runs = tmp_path / "runs"
    assert submit_jobs(roster_jobs(roster, runs, ["--partition=gpu"]), dry_run=True) == _sbatch_lines(runs)
    assert " ".join(entry_run_arguments(roster.entry("Qwen3.6-27B"), runs)) == (
        f"--model Qwen/Qwen3.6-27B --model-name Qwen3.6-27B --out {runs}/Qwen3.6-27B --protocol release --thinking "
        "--max-model-len 32768 --tensor-parallel-size 1 --pipeline-parallel-size 1 --gpu-memory-utilization 0.9 "
        "--progress plain")
    assert " ".join(entry_run_arguments(roster.entry("FunctionGemma-270M-it"), runs)) == (
        f"--model google/functiongemma-270m-it --model-name FunctionGemma-270M-it --out {runs}/FunctionGemma-270M-it "
        "--protocol release --max-model-len 32768 --tensor-parallel-size 1 --pipeline-parallel-size 1 "
        "--gpu-memory-utilization 0.9 --progress plain")


def test_the_paper_protocol_would_read_qwen3_6_with_qwen2_5s_rule(tmp_path: Path, monkeypatch) -> None:
    """Why the roster runs `protocol = "release"`: the paper protocol's family rules know no 2026 family.
    Qwen3.6's id falls to the inferred `qwen3` rule, whose parse rule reads Qwen2.5's JSON calls and finds
    none in Qwen3.5's XML call (a real output, vLLM's Qwen3.5 test sample); other ids fall to the generic rule."""
    import json
    from dataclasses import replace

    from wtb_local.analysis.roster.file import load_roster
    from wtb_local.analysis.roster.plan import plan_entry
    from wtb_local.benchmark.protocols.parse_rules import PaperParser
    from wtb_local.formats.parsers import get_parser

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    roster = load_roster(ROSTER_2026)
    planned = {row: plan_entry(replace(roster.entry(row), protocol="paper", thinking=None), roster)
               for row in ("Qwen3.6-27B", "Gemma-4-31B-it")}
    assert [(p.parser, p.family) for p in planned.values()] == [("paper:qwen", "qwen3 (inferred)"),
                                                              ("paper:native:gemma4", "generic (inferred)")]
    samples = (ROOT / "tests" / "fixtures" / "parsers" / "2026" / "gemma-qwen35-olmo.jsonl").read_text().splitlines()
    sample = next(s for s in map(json.loads, samples) if s["line"] == 118)
    assert sample["model"] == "Qwen/Qwen3.5-4B" and "<function=special_function>" in sample["text"]
    assert PaperParser("qwen").parse(sample["text"], tools=sample["tools"]).tool_calls == []
    calls = get_parser("qwen3_coder").parse(sample["text"], tools=sample["tools"]).tool_calls  # typed by schema
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("special_function", {"arg1": 1})]
