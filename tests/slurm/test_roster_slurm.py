"""The whole paper roster submitted to a real single-node Slurm (Debian's slurmctld + slurmd + munge on
localhost) by `python -m wtb_local plan rosters/paper.toml --submit`: every entry as a task of its resource
class's array, then the report job (afterany). The test overrides (docs/roster.md §5) run every entry with
the oracle backend on one session of the embedded sample (WTB_ROSTER_RUN_OPTIONS), request no GPU
(WTB_ROSTER_GPUS=0) and run the two-node entries as single-node tasks (WTB_ROSTER_SINGLE_NODE), since the
test cluster has one node. The report job must write a Table 6 with every open-weight paper row matched
to its run.

Runs in CI (CI=true) always; elsewhere it skips when the Slurm programs are missing.
"""

from __future__ import annotations

import csv
import os
import re
import sys
import time
from pathlib import Path

import pytest

from tests.slurm.cluster import local_slurm, missing_programs

ROOT = Path(__file__).resolve().parents[2]
MISSING = missing_programs()

# A private Slurm cluster started in the fixture, then jobs queued, run and waited for (up to 300 s
# each): more than the default limit.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(bool(MISSING) and os.environ.get("CI") != "true",
                       reason=f"Slurm not installed ({', '.join(MISSING)}): apt-get install -y slurm-wlm munge"),
]


def test_the_whole_paper_roster_through_slurm_matches_every_open_weight_row(tmp_path: Path) -> None:
    if MISSING:
        pytest.fail(f"CI=true but Slurm is not installed ({', '.join(MISSING)}); .ci/run installs it")
    from wtb_local.analysis.roster.plan import open_weight_rows

    work, runs = tmp_path / "work", tmp_path / "work" / "runs"
    work.mkdir()
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1",
        "WTB_ROSTER_RUN_OPTIONS": "--backend oracle --dataset sample --limit 1",
        "WTB_ROSTER_GPUS": "0", "WTB_ROSTER_SINGLE_NODE": "1",
    }
    started = time.monotonic()
    with local_slurm(gpus=2) as cluster:
        submitted = cluster.run(sys.executable, "-m", "wtb_local", "plan", str(ROOT / "rosters" / "paper.toml"),
                                "--submit", "--runs-dir", str(runs), "--sbatch-option=--cpus-per-task=1",
                                "--sbatch-option=--mem=512M", "--sbatch-option=--time=10", cwd=work, env=env,
                                timeout=120)
        jobs = submitted.stdout.splitlines()[-6:]
        assert [line.split(":")[0] for line in jobs] == ["gpu1", "gpu2", "gpu4", "gpu8", "gpu8x2", "report"], \
            submitted.stdout + submitted.stderr
        assert re.fullmatch(r"gpu8x2: job \d+ \(array 0-3: Kimi-K2 DeepSeek-V3 DeepSeek-V3.1 DeepSeek-R1\)", jobs[4])
        ids = [re.search(r"job (\d+)", line).group(1) for line in jobs]
        assert jobs[5] == f"report: job {ids[5]} (afterany:{':'.join(ids[:5])})"
        deadline = time.monotonic() + 420
        while cluster.run("squeue", "-h", "-o", "%i").stdout.strip():
            if time.monotonic() > deadline:
                queue = cluster.run("squeue", "-a", "-o", "%i %T %r", check=False).stdout
                raise AssertionError(f"the roster's jobs did not end in time; squeue: {queue!r}")
            time.sleep(1)
        logs = {path.name: path.read_text(errors="replace") for path in (work / "logs").iterdir()}
    elapsed = time.monotonic() - started

    report_log = logs[f"wtb_roster_report_{ids[5]}.out"]
    wanted = open_weight_rows()
    assert len(wanted) == 41
    assert report_log.startswith(f"roster {ROOT / 'rosters' / 'paper.toml'}: 41 of the paper's 41 open-weight "
                                 "rows matched to a run;"), report_log[:2000]
    markdown = (runs / "roster-report" / "roster_report.md").read_text(encoding="utf-8")
    table6 = markdown.split("Table 6 (accuracy, %)")[1].split("Table 7")[0]
    labels = [line.split("  ")[0] for line in table6.splitlines()[2:] if line]
    from wtb_local.analysis.reports.paper import paper_rows
    from wtb_local.analysis.reports.table import LABEL_WIDTH, short_label

    # a label longer than the tables leave it (at most LABEL_WIDTH: what the cells leave of 120 columns) is
    # shortened to that width; the diff rows' labels are longer than any, so the widest label printed is it
    width = max(len(label) for label in labels)
    assert 30 <= width <= LABEL_WIDTH and all(len(line) <= 120 for line in table6.splitlines())
    assert [label for label in labels if label.startswith("paper: ")] == [
        short_label(f"paper: {n}", width) for n in paper_rows(6)]
    for row in wanted:  # every open-weight row: the paper's line, then the run's, then the difference
        at = labels.index(short_label(f"paper: {row}", width))
        assert labels[at + 1:at + 3] == [short_label(f"{row} [paper-lenient]", width),
                                         short_label(f"diff: {row} [paper-lenient]", width)], row
    with (runs / "roster-report" / "reproduction.csv").open(encoding="utf-8") as handle:
        summary = list(csv.DictReader(handle))
    assert sorted(line["row"] for line in summary) == sorted(wanted)
    assert {(line["protocol"], line["checker"], line["sessions"], line["status"]) for line in summary} == {
        ("paper", "lenient", "1", "complete")}
    assert all(line["within 2"] in ("yes", "no") and line["paper task"] for line in summary)
    print(f"roster through Slurm: {elapsed:.0f} s")
