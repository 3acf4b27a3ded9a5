"""One presenter (docs/outputs-and-reports.md): `run`, `run --repeats`, `merge`, `score`, `rescore` and
`report` give one run the same label, the same paper row (by the recorded effective thinking mode) and the
same notes; `report` shows a repeats run's mean row and splits the gap to the paper over every run it
shows. Each case runs the real commands in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.tables import printed_label
from tests.run.conftest import VECTORS, chat_template
from tests.run.fake_openai import fake_openai_server

ROOT = Path(__file__).resolve().parents[2]
QWEN25 = "Qwen/Qwen2.5-7B-Instruct"


def _wtb(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "WTB_OFFLINE": "1", "WTB_PROGRESS": "none"}
    done = subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def _rows(stdout: str) -> dict[str, list[str]]:
    """Table 6 rows of plain-text output: label -> the ten values."""
    lines = stdout.splitlines()
    start = lines.index("Table 6 (accuracy, %)") + 2
    rows = {}
    for line in lines[start:]:
        if line.startswith("  "):  # a row's ± se, 95% CI and n lines
            continue
        cells = line.split()
        if len(cells) < 11 or not all(c == "-" or c.lstrip("+-").replace(".", "", 1).isdigit() for c in cells[-10:]):
            break
        rows[" ".join(cells[:-10])] = cells[-10:]
    return rows


def _notes(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("note: ")]


def test_a_paper_run_has_one_label_and_paper_row_in_every_command(tmp_path: Path) -> None:
    run_dir = tmp_path / "paper"
    ran = _wtb("--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "2",
               "--protocol", "paper", "--out", str(run_dir))
    label = "Qwen_Qwen3-8B [paper-lenient]"  # the run's own scoring: the lenient checker
    assert list(_rows(ran.stdout)) == [label, "paper: Qwen3-8B-Thinking"]
    # the legends first (uncertainty, AP, OP), then the protocol line, then what this run's row needs
    assert [note[:22] for note in _notes(ran.stdout)[:4]] == [
        "note: ± se: standard e", "note: AP (accomplished", "note: OP (optimal path", "note: this run: --prot"]
    assert _notes(ran.stdout)[4:] == [
        ("note: paper row Qwen3-8B-Thinking: the run records no thinking mode (its manifest says: no prompt "
         "rendered: unknown); compared as its model's chat template behaves without a switch: Qwen3's chat "
         "template thinks unless enable_thinking=false (--no-thinking: Qwen3-8B)"),
        ("note: the paper-protocol rule `qwen3` is inferred, not documented by the paper's harness (inferred: §2.1 "
        "says Qwen3 would go through the Qwen path (listed, not wired); thinking text stays in the content)"),
        "note: 2 of the release's 256 sessions were scored (dataset: sample); the paper's row is over all 256."]

    # `score` re-scores the run with the checker it records: same files, same label, same notes
    score_file = run_dir / "score" / "Qwen_Qwen3-8B" / "Wild-Tool-Bench_score.jsonl"
    before = score_file.read_bytes()
    scored = _wtb("score", str(run_dir))
    assert score_file.read_bytes() == before
    assert _rows(scored.stdout) == _rows(ran.stdout) and _notes(scored.stdout) == _notes(ran.stdout)

    strict = _wtb("rescore", str(run_dir), "--checker", "strict")
    assert list(_rows(strict.stdout)) == ["Qwen_Qwen3-8B [paper-strict]", "paper: Qwen3-8B-Thinking"]

    report = _wtb("report", str(run_dir), "--table", "6")
    rows = _rows(report.stdout)
    assert list(rows) == [label, "paper: Qwen3-8B-Thinking", f"diff: {label}", "Qwen_Qwen3-8B [paper-strict]",
                          "diff: Qwen_Qwen3-8B [paper-strict]"]
    assert rows[label] == _rows(ran.stdout)[label]
    assert rows["Qwen_Qwen3-8B [paper-strict]"] == _rows(strict.stdout)["Qwen_Qwen3-8B [paper-strict]"]
    # the run's notes, after its label (the protocol line is the report's legend)
    assert [note for note in _notes(report.stdout) if note.startswith(f"note: {label}: ")] == [
        f"note: {label}: {note.removeprefix('note: ')}" for note in _notes(ran.stdout)[4:]]


@pytest.fixture(scope="module")
def qwen3_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model named like Qwen3-8B with Qwen3's real template: it thinks unless told not to."""
    from tests.helpers import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("qwen3") / "Qwen3-8B", chat_template("Qwen/Qwen3-0.6B"),
                            special_tokens=["<tool_call>", "</tool_call>", "<think>", "</think>"], arch="qwen3",
                            max_position_embeddings=8192)


def test_repeats_and_merge_take_the_paper_row_of_the_recorded_thinking_mode(qwen3_dir: Path,
                                                                            tmp_path: Path) -> None:
    """No --thinking flag: Qwen3's template thinks by default, the manifest records it, and every command
    compares the run with the paper's Qwen3-8B-Thinking row (the flag alone would say the other row)."""
    base = ["--model", str(qwen3_dir), "--backend", "oracle", "--dataset", "sample", "--limit", "2"]
    # repeats need a backend that samples: a loopback server, the prompts rendered with the same template
    with fake_openai_server(str(qwen3_dir)) as server:
        repeated = _wtb("--model", str(qwen3_dir), "--backend", "openai", "--base-url", server.base_url,
                        "--dataset", "sample", "--limit", "2", "--temperature", "0.7", "--repeats", "2",
                        "--out", str(tmp_path / "rep"))
    manifest = json.loads((tmp_path / "rep" / "repeats" / "0" / "manifest.json").read_text())
    assert manifest["thinking"]["effective"] is True and manifest["thinking"]["asked"] is None
    assert list(_rows(repeated.stdout)) == ["Qwen3-8B (mean of 2)", "paper: Qwen3-8B-Thinking"]

    for shard in ("0/2", "1/2"):
        _wtb(*base, "--shard", shard, "--out", str(tmp_path / "sharded"))
    merged = _wtb("merge", str(tmp_path / "sharded"))
    assert list(_rows(merged.stdout)) == ["Qwen3-8B", "paper: Qwen3-8B-Thinking"]

    report = _wtb("report", str(tmp_path / "rep"), str(tmp_path / "sharded"), "--table", "6")
    assert sorted({label for label in _rows(report.stdout) if label.startswith("paper: ")}) == [
        "paper: Qwen3-8B-Thinking"]


def test_report_on_a_repeats_folder_shows_the_mean_row_run_printed(qwen3_dir: Path, tmp_path: Path) -> None:
    from wtb_local.analysis.commands.repeat_runs import error_bar_line

    out = tmp_path / "rep"
    with fake_openai_server(str(qwen3_dir), vary_by_seed=True) as server:  # repeats need a backend that samples
        ran = _wtb("--model", str(qwen3_dir), "--model-name", "Qwen/Qwen3-8B", "--no-thinking", "--backend",
                   "openai", "--base-url", server.base_url, "--dataset", "sample", "--limit", "2",
                   "--temperature", "0.7", "--repeats", "2", "--out", str(out))
    mean = "Qwen_Qwen3-8B (mean of 2)"
    assert list(_rows(ran.stdout)) == [mean, "paper: Qwen3-8B"]
    error_bars = error_bar_line("Qwen_Qwen3-8B", json.loads((out / "repeats.json").read_text()))
    assert ran.stdout.splitlines()[-1] == error_bars

    report = _wtb("report", str(out), "--table", "6")
    rows = _rows(report.stdout)
    assert list(rows) == [printed_label(label, report.stdout) for label in (
        f"Qwen_Qwen3-8B ({out / 'repeats' / '0'})", "paper: Qwen3-8B", f"diff: Qwen_Qwen3-8B ({out / 'repeats' / '0'})",
        f"Qwen_Qwen3-8B ({out / 'repeats' / '1'})", f"diff: Qwen_Qwen3-8B ({out / 'repeats' / '1'})", mean,
        f"diff: {mean}")]
    assert rows[mean] == _rows(ran.stdout)[mean]
    assert error_bars in report.stdout.splitlines()
    assert f"note: {mean}: the mean of 2 repeats (repeats/0, repeats/1)" in report.stdout.splitlines()


def _scripted(out: Path, *extra: str) -> list[str]:
    return ["--backend", "scripted", "--script", str(VECTORS / "script.jsonl"), "--dataset",
            str(VECTORS / "dataset.jsonl"), "--model-name", QWEN25, "--out", str(out), *extra]


def test_the_gap_line_sees_every_run_of_the_report(tmp_path: Path) -> None:
    """A release run (scored strict, re-scored lenient) and a paper run of one model in one report: one
    line splits the gap into the checker's part, the protocol's part and the rest."""
    release, paper = tmp_path / "release", tmp_path / "paper"
    _wtb(*_scripted(release))
    _wtb(*_scripted(paper, "--protocol", "paper"))
    _wtb("rescore", str(release), "--checker", "lenient")

    def accuracy(path: Path) -> float:
        metric = json.loads((path / "Qwen_Qwen2.5-7B-Instruct" / "Wild-Tool-Bench_metric.json").read_text())
        return 100 * metric["total_info"]["task"]["accuracy"]

    s, le, p = accuracy(release / "score"), accuracy(release / "score-lenient" / "score"), accuracy(paper / "score")
    assert round(le, 2) != round(s, 2)  # the scripted replies include arguments the two checkers judge differently
    report = _wtb("report", str(release), str(paper), "--table", "6")
    assert [line for line in report.stdout.splitlines() if line.startswith("gap to the paper")] == [
        (f"gap to the paper (Qwen_Qwen2.5-7B-Instruct, --protocol release and paper, task accuracy): "
        f"release-strict {s:.2f}, release-lenient {le:.2f} (checker: {le - s:+.2f}); paper-lenient {p:.2f} "
        f"(protocol: {p - le:+.2f}); paper 45.02 (the rest: {45.02 - p:+.2f}, prompts/generation/sampling/parse "
        "rules)")]
