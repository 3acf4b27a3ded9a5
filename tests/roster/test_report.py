"""`roster-run` and `roster-report` through the real CLI: two entries of a small roster run with the oracle
backend on one sample session (WTB_ROSTER_RUN_OPTIONS), the third never ran; the report shows every paper
row, each roster row's run and diff (or `no run`), and the reproduction summary."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.helpers.tables import label_width, printed_label
from tests.roster.conftest import wtb

ROSTER = '''[defaults]
max_model_len = 32768

[resources.one]
gpus_per_node = 1
gpu = "H100 80GB"
gpu_memory_gib = 79.6

[[entry]]
row = "Qwen3-8B-Thinking"
model = "Qwen/Qwen3-8B"
thinking = true
resources = "one"
params_b = 8.2

[[entry]]
row = "Hammer2.1-7B"
model = "MadeAgents/Hammer2.1-7b"
resources = "one"
params_b = 7.62
protocol = "release"

[[entry]]
row = "Watt-8B"
model = "watt-ai/watt-tool-8B"
resources = "one"
params_b = 8.03
'''


def test_roster_runs_and_report(tmp_path: Path) -> None:
    roster, runs, hf = tmp_path / "roster.toml", tmp_path / "runs", tmp_path / "hf"
    roster.write_text(ROSTER)
    options = {"WTB_ROSTER_RUN_OPTIONS": "--backend oracle --dataset sample --limit 1"}
    for row in ("Qwen3-8B-Thinking", "Hammer2.1-7B"):
        proc = wtb("roster-run", str(roster), row, "--runs-dir", str(runs), hf_home=hf, env=options)
        assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0] == (
        f"roster {roster}: Hammer2.1-7B: python -m wtb_local run --model MadeAgents/Hammer2.1-7b --model-name "
        f"Hammer2.1-7B --out {runs}/Hammer2.1-7B --protocol release --max-model-len 32768 --tensor-parallel-size 1 "
        "--pipeline-parallel-size 1 --progress plain --backend oracle --dataset sample "
        "--limit 1")
    missing = wtb("roster-run", str(roster), "Nope-1B", hf_home=hf)
    assert missing.returncode == 1 and missing.stderr == f"Error: {roster}: no entry for row 'Nope-1B'\n"

    proc = wtb("roster-report", str(roster), "--runs-dir", str(runs), hf_home=hf)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == (f"roster {roster}: 2 of the paper's 41 open-weight rows matched to a run; 0 of 2 within ±2 "
                        "task-accuracy points of the paper")
    assert lines[1].startswith("open-weight rows without a run: GLM-4.5, Kimi-K2, ")
    table6 = proc.stdout.split("Table 6 (accuracy, %)\n")[1].split("\n\n")[0].splitlines()
    assert len([line for line in table6 if line.startswith("paper: ")]) == 57  # the paper's whole table
    at = next(i for i, line in enumerate(table6) if line.startswith("paper: Qwen3-8B-Thinking "))
    # one session has no clarify task: that bucket is empty (`-`), not 0%
    assert table6[at + 1].split() == ["Qwen3-8B-Thinking", "[paper-lenient]", "100.00", "100.00", "-"] + ["100.00"] * 7
    # the diff row's label is longer than its ±100 cells leave it (38 characters here), as the note says
    assert label_width(proc.stdout) == 38
    assert table6[at + 2].startswith(printed_label("diff: Qwen3-8B-Thinking [paper-lenient]", proc.stdout) + "  ")
    assert table6[at + 2].split()[-2:] == ["+45.70", "+91.02"]
    at = next(i for i, line in enumerate(table6) if line.startswith("paper: Hammer2.1-7B "))
    assert table6[at + 1].split()[:2] == ["Hammer2.1-7B", "[release-strict]"]
    at = next(i for i, line in enumerate(table6) if line.startswith("paper: Watt-8B "))
    assert table6[at + 1].split() == ["Watt-8B:", "no", "run"] + ["-"] * 10

    with (runs / "roster-report" / "reproduction.csv").open(encoding="utf-8") as handle:
        summary = {line["row"]: line for line in csv.DictReader(handle)}
    assert list(summary) == ["Qwen3-8B-Thinking", "Hammer2.1-7B", "Watt-8B"]
    qwen = summary["Qwen3-8B-Thinking"]
    columns = ("protocol", "checker", "family", "sessions", "task", "paper task", "task diff", "within 2",
               "length cuts", "parse failures %", "status")
    assert [qwen[c] for c in columns] == ["paper", "lenient", "qwen3 (inferred)", "1", "100.00", "54.30", "45.70",
                                          "no", "0 of 8", "0.00", "complete"]
    hammer = summary["Hammer2.1-7B"]
    assert (hammer["protocol"], hammer["checker"], hammer["family"]) == ("release", "strict", "-")
    assert summary["Watt-8B"]["within 2"] == "no run"
    assert summary["Watt-8B"]["status"] == f"no run directory {runs}/Watt-8B"
    assert (runs / "roster-report" / "roster_report.md").read_text().startswith("# Roster report\n\n```\nroster ")


OTHER_MODELS = '''compare_with = "none"

[defaults]
max_model_len = 32768
protocol = "release"

[resources.one]
gpus_per_node = 1
gpu = "H200 141GB"
gpu_memory_gib = 140.4

[[entry]]
row = "Qwen3.6-27B"
model = "Qwen/Qwen3.6-27B"
thinking = true
resources = "one"
params_b = 27.78

[[entry]]
row = "Hammer2.1-7B"
model = "MadeAgents/Hammer2.1-7b"
resources = "one"
params_b = 7.62

[[entry]]
row = "Gemma-4-31B-it"
model = "google/gemma-4-31B-it"
resources = "one"
params_b = 30.7
'''


def test_a_roster_compared_with_no_paper_table_reports_its_own_rows(tmp_path: Path) -> None:
    """`compare_with = "none"`: the tables list the roster's rows in its order (a row the paper has keeps its
    paper row and difference); no count of the paper's rows, no list of those without a run."""
    roster, runs, hf = tmp_path / "roster.toml", tmp_path / "runs", tmp_path / "hf"
    roster.write_text(OTHER_MODELS)
    options = {"WTB_ROSTER_RUN_OPTIONS": "--backend oracle --dataset sample --limit 1"}
    for row in ("Qwen3.6-27B", "Hammer2.1-7B"):
        proc = wtb("roster-run", str(roster), row, "--runs-dir", str(runs), hf_home=hf, env=options)
        assert proc.returncode == 0, proc.stderr
    proc = wtb("roster-report", str(roster), "--runs-dir", str(runs), hf_home=hf)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:2] == [(f"roster {roster}: 2 of 3 entries have a scored run; compared with no paper table "
                         "(compare_with = 'none'); 0 of 1 with a paper row within ±2 task-accuracy points of it"),
                         ("note: 2 run(s) scored fewer or more than the release's 256 sessions; their rows are not "
                         "comparable with the paper's")]
    assert "open-weight rows" not in proc.stdout
    table6 = proc.stdout.split("Table 6 (accuracy, %)\n")[1].split("\n\n")[0].splitlines()
    assert [line.split("  ")[0] for line in table6[1:]] == [
        "Qwen3.6-27B [release-strict]", "Hammer2.1-7B [release-strict]", "paper: Hammer2.1-7B",
        "diff: Hammer2.1-7B [release-strict]", "Gemma-4-31B-it: no run"]
    assert table6[1].split()[2:] == ["100.00", "100.00", "-"] + ["100.00"] * 7
    assert table6[4].split()[-2:] == ["+53.12", "+95.31"]
    with (runs / "roster-report" / "reproduction.csv").open(encoding="utf-8") as handle:
        summary = {line["row"]: line for line in csv.DictReader(handle)}
    assert [(s["protocol"], s["sessions"], s["paper task"], s["within 2"]) for s in summary.values()] == [
        ("release", "1", "", "no paper row"), ("release", "1", "46.88", "no"), ("release", "0", "", "no run")]
    assert "\n\nSummary\n" in proc.stdout and "Reproduction summary" not in proc.stdout
