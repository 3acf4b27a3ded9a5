"""The uncertainty estimators (docs/reports.md, "Uncertainty"): textbook cases with exact numbers, a seeded
simulation of correlated tasks within sessions, and the estimates of hand-made score rows."""

from __future__ import annotations

import json
import math
import random
import shutil
import statistics
from pathlib import Path

import pytest

from tests.benchmark.test_metrics import SESSIONS, _task
from wtb_local.benchmark.scoring.uncertainty import (
    RATE,
    beyond_noise,
    binomial,
    cluster_ratio,
    estimates,
    metric_uncertainty,
    paired_difference,
    per_session_metrics,
    wilson,
)


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    # Newcombe (1998), Statistics in Medicine 17:857-872, Table I, method 3 (Wilson score, no correction)
    (81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718),
    (29, 29, 0.8830, 1.0)])
def test_wilson_matches_newcombes_table(k: int, n: int, low: float, high: float) -> None:
    got = wilson(k, n)
    assert (round(got[0], 4), round(got[1], 4)) == (low, high)


def test_cluster_se_by_hand() -> None:
    # p = 3/6; residuals y - p m: 0, -1, 1; G/(G-1) = 3/2: var = 1.5 * 2 / 36
    estimate = cluster_ratio([(1, 2), (0, 2), (2, 2)])
    assert estimate.value == 0.5 and estimate.n == 6 and estimate.sessions == 3
    assert estimate.se == pytest.approx(math.sqrt(3 / 36), abs=1e-12)


def test_one_task_per_session_is_the_sample_standard_error() -> None:
    # the paired-t standard error of d = 1,0,0,1,-1,0,1,1: sample variance 3.875/7, se = sqrt(that / 8)
    pairs = [(i, a, b) for i, (a, b) in enumerate([(1, 0), (0, 0), (1, 1), (1, 0), (0, 1), (0, 0), (1, 0), (1, 0)])]
    difference = paired_difference(pairs)
    assert difference.value == 0.375 and difference.n == 8
    assert difference.se == pytest.approx(0.2630521, abs=1e-7)
    assert not beyond_noise(difference)  # 0.375 +- 1.96 * 0.263 holds 0
    assert beyond_noise(paired_difference([(i, 1, 0) for i in range(4)] + [(4, 1, 1), (5, 0, 1)])) is False
    strong = paired_difference([(i // 2, 1, 0) for i in range(30)] + [(15, 0, 1), (16, 1, 1)])
    assert beyond_noise(strong) and strong.low > 0


def test_session_accuracy_is_binomial() -> None:
    estimate = binomial(4, 32)
    assert estimate.se == pytest.approx(math.sqrt(0.125 * 0.875 / 32), abs=1e-12)
    assert (round(estimate.low, 4), round(estimate.high, 4)) == (0.0497, 0.2807)  # Wilson, 4 of 32 (by hand: 0.05567 / 1.12005, 0.31438 / 1.12005)


def test_all_correct_bucket_still_has_an_interval() -> None:
    # five chat tasks in five sessions, all right: se 0, yet the interval is Wilson's for 5 of 5
    estimate = cluster_ratio([(1, 1)] * 5)
    assert estimate.se == 0 and (round(estimate.low, 4), estimate.high) == (0.5655, 1.0)


def test_simulated_sessions_coverage_and_se() -> None:
    """40 sessions of 4 tasks; each session's success chance drawn from Beta(0.6, 1.4) (mean 0.3, intra-
    session correlation 1/3), 2000 seeded replications. Theory: sd(p) = sqrt(0.21 / 160 * (1 + 3 / 3)) =
    0.05123; the naive binomial error misses the correlation (0.0362) and its interval covers ~84%."""
    rng = random.Random(20261205)
    values, errors, naive_errors, covered, naive_covered = [], [], [], 0, 0
    for _ in range(2000):
        parts = []
        for _session in range(40):
            chance = rng.betavariate(0.6, 1.4)
            parts.append((sum(rng.random() < chance for _ in range(4)), 4))
        estimate = cluster_ratio(parts)
        naive = math.sqrt(estimate.value * (1 - estimate.value) / 160)
        values.append(estimate.value)
        errors.append(estimate.se)
        naive_errors.append(naive)
        covered += estimate.low <= 0.3 <= estimate.high
        naive_covered += abs(estimate.value - 0.3) <= 1.96 * naive
    assert statistics.pstdev(values) == pytest.approx(0.05123, abs=0.003)
    assert statistics.mean(errors) == pytest.approx(0.05123, rel=0.05)
    assert statistics.mean(naive_errors) == pytest.approx(0.0362, rel=0.03)
    assert 0.935 <= covered / 2000 <= 0.965
    assert naive_covered / 2000 < 0.88


ROWS = [
    {"id": "wild_tool_bench_0", "results": [_task("correct", 1), _task("error", 2), _task("correct", 4),
                                            _task("correct", 1)]},
    {"id": "wild_tool_bench_1", "results": [_task("error", 1), _task("correct", 5, True), _task("error", 1),
                                            _task("error", 1)]},
]


def test_metric_uncertainty_of_score_rows() -> None:
    found = metric_uncertainty(ROWS, SESSIONS, [("total_info", "task", "accuracy"),
                                                ("total_info", "session", "accuracy"),
                                                ("task_type_info", "Single-Tool", "accuracy"),
                                                ("progress_info", "Total", "rate")])
    task = found[("total_info", "task", "accuracy")]
    # 3 of 4 and 1 of 4: p = 1/2, residuals 1 and -1, G/(G-1) = 2: se = sqrt(2 * 2) / 8
    assert (task.value, task.n, task.sessions, task.se) == (0.5, 8, 2, 0.25)
    session = found[("total_info", "session", "accuracy")]
    assert (session.value, session.n, session.se) == (0.0, 2, 0.0)
    single = found[("task_type_info", "Single-Tool", "accuracy")]
    assert (single.value, single.n, single.se) == (0.5, 2, 0.5)  # residuals 1/2, -1/2: sqrt(2 * 0.5) / 2
    progress = found[("progress_info", "Total", "rate")]
    # session 0: S task 4 steps of 4 nodes; session 1: S+P tasks 5 + 1 steps of 6 + 4 nodes (its Chinese answer
    # list's lengths, as the reference counts them) -> 10 / 14
    assert (progress.value, progress.n, progress.method) == (10 / 14, 14, RATE)
    p = 10 / 14
    assert progress.se == pytest.approx(math.sqrt(2 * ((4 - 4 * p) ** 2 + (6 - 10 * p) ** 2)) / 14, abs=1e-12)


def test_repeats_average_each_session_before_clustering() -> None:
    flipped = [ROWS[1] | {"id": "wild_tool_bench_0"}, ROWS[0] | {"id": "wild_tool_bench_1"}]
    runs = [per_session_metrics(ROWS, SESSIONS), per_session_metrics(flipped, SESSIONS)]
    task = estimates(runs, [("total_info", "task", "accuracy")])[("total_info", "task", "accuracy")]
    # each session averages 3 and 1 of 4 to 2 of 4: no spread between sessions is left
    assert (task.value, task.n, task.se) == (0.5, 8, 0.0)


VECTORS = Path(__file__).parents[1] / "fixtures" / "vectors" / "sessions"


def _vector_rows() -> tuple[list[dict], list]:
    from wtb_local.benchmark.dataset import read_dataset

    sessions, _ = read_dataset(VECTORS / "dataset.jsonl")
    rows = [json.loads(line) for line in (VECTORS / "score.jsonl").read_text(encoding="utf-8").splitlines()]
    return rows, sessions


def test_long_labels_are_shortened_and_the_tables_fit_120_columns() -> None:
    from wtb_local.analysis.reports.table import (
        LABEL_WIDTH,
        SHORTENED_NOTE,
        format_plain,
        legend_notes,
        metric_row,
        scored_errors,
        short_label,
    )

    rows, sessions = _vector_rows()
    metric = json.loads((VECTORS / "metric.json").read_text(encoding="utf-8"))
    label = "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M-1d9614638d18024d [paper-lenient]"  # 40: 23 + … + 16
    row = metric_row(metric, label, scored_errors(rows, sessions, metric))
    assert short_label(label) == "Qwen2.5-Coder-0.5B-Inst… [paper-lenient]"
    assert short_label("diff: " + "x" * 60 + " (mean of 3)") == "diff: " + "x" * 21 + "… (mean of 3)"
    assert short_label("short") == "short" and len(short_label(label)) == LABEL_WIDTH
    # a run told apart by its folder keeps the folder's end
    assert short_label("Qwen_Qwen3-8B (/tmp/pytest-of-root/pytest-1/test_two_runs_of_0/all)") == \
        "Qwen_Qwen3-8B (…/test_two_runs_of_0/all)"
    for table in (6, 7):
        text = format_plain([row], table)
        assert max(len(line) for line in text.splitlines()) <= 120
        assert text.splitlines()[2].startswith("Qwen2.5-Coder-0.5B-Inst… [paper-lenient]")
        assert [line.split()[0] for line in text.splitlines()[3:]] == ["±", "95%", "n"]
    assert legend_notes([row])[-1] == SHORTENED_NOTE.format(width=40)
    assert "`--model-name NAME`" in SHORTENED_NOTE


def test_the_widest_cells_leave_the_label_less_room_and_the_tables_still_fit_120_columns() -> None:
    """A run at 100% in every column next to a paper row at 0: its `diff` row is +100.00 everywhere (seven
    characters, wider than most headers); the labels of every row then take 30 columns, in both tables."""
    from wtb_local.analysis.reports.table import (
        COLUMNS,
        SHORTENED_NOTE,
        ReportRow,
        diff_row,
        format_plain,
        label_width,
        legend_notes,
    )

    ours = ReportRow("m" * 36, {t: dict.fromkeys(COLUMNS[t], 100.0) for t in (6, 7)})
    paper = ReportRow("paper: " + "p" * 20, {t: dict.fromkeys(COLUMNS[t], 0.0) for t in (6, 7)})
    rows = [ours, paper, diff_row(ours, paper)]
    # without the diff row: Table 6, 120 - 10 * 2 - 62 (eight columns of 100.00, clarify and session 7 wide)
    assert label_width(rows) == 30 and label_width(rows[:2]) == 38
    for table in (6, 7):
        lines = format_plain(rows, table).splitlines()
        assert max(len(line) for line in lines) == 120
        assert [line[:31] for line in lines[2:]] == ["m" * 29 + "… ", "paper: " + "p" * 20 + "    ",
                                                     "diff: " + "m" * 23 + "… "]
        assert lines[4].split()[2:] == ["+100.00"] * 10
    assert legend_notes(rows)[-1] == SHORTENED_NOTE.format(width=30)
    assert "fit 120 columns" in SHORTENED_NOTE


def test_report_pairs_two_runs_of_the_same_tasks(tmp_path: Path) -> None:
    """Two harness output folders of the same 64 sessions; b has the first task of 10 sessions (right in a)
    judged wrong. The difference is 10/256 = 3.91 points; clustered: 10 sessions differ by 1 task, 54 by 0,
    so se = sqrt(64/63 * (10 * (1 - 4p)^2 + 54 * (4p)^2)) / 256 = 1.1436 with p = 10/256; 95%: 3.906 +- 2.241."""
    from click.testing import CliRunner

    from wtb_local.cli import cli

    rows, _ = _vector_rows()
    flipped = 0
    changed = []
    for row in rows:
        row = json.loads(json.dumps(row))
        if flipped < 10 and row["results"][0]["label"] == "correct":
            row["results"][0]["label"] = "error"
            flipped += 1
        changed.append(row)
    for name, score in (("a", rows), ("b", changed)):
        for sub in ("result", "score"):
            (tmp_path / "rec" / sub / name).mkdir(parents=True)
        shutil.copy(VECTORS / "result.jsonl", tmp_path / "rec" / "result" / name / "Wild-Tool-Bench_result.jsonl")
        (tmp_path / "rec" / "score" / name / "Wild-Tool-Bench_score.jsonl").write_text(
            "".join(json.dumps(row) + "\n" for row in score), encoding="utf-8")
    done = CliRunner().invoke(cli, ["report", str(tmp_path / "rec"), "--dataset", str(VECTORS / "dataset.jsonl"),
                                    "--table", "6"])
    assert done.exit_code == 0, done.output
    p = 10 / 256
    se = math.sqrt(64 / 63 * (10 * (1 - 4 * p) ** 2 + 54 * (4 * p) ** 2)) / 256
    assert round(100 * se, 2) == 1.14
    assert ("paired: a - b: task accuracy +3.91 ± 1.14 (95% +1.66..+6.15; 256 tasks, 64 sessions, clustered by "
            "session): larger than its noise") in done.output.splitlines()
