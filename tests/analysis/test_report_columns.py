"""The report's fixed columns are one record each (analysis/reports/columns.py): every list the report and the
exports read (headers, CSV columns, glossary, Table 6/7 sources, health, versions, the leaderboard's and
MLflow's columns) comes from it, and `report`'s output did not move when the parallel lists became records:
the recorded harness run of the golden vectors gives, byte for byte, the files and lines `report` wrote
before (tests/fixtures/report_columns, written by the code before the registry), with the uncertainty rows
(± se, 95% CI, n) and the legend notes added on purpose since (docs/reports.md "Uncertainty"; the task,
single, clarify and chat standard errors checked by an independent computation from the score file)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from wtb_local.analysis.reports.columns import REPORT_COLUMNS, columns_of, headers_of, keys_of
from wtb_local.cli import cli

FIXTURES = Path(__file__).parents[1] / "fixtures"
EXPECTED = FIXTURES / "report_columns"
VECTORS = FIXTURES / "vectors" / "sessions"


def test_report_output_is_byte_identical_to_before_the_column_records(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the run named as the fixture's was: `rec` (report.json records the path given)
    run = Path("rec")
    for sub, names in (("result", ("result.jsonl",)), ("score", ("score.jsonl", "metric.json"))):
        folder = run / sub / "scripted"
        folder.mkdir(parents=True)
        for name in names:
            stem, suffix = name.split(".")
            shutil.copy(VECTORS / name, folder / f"Wild-Tool-Bench_{stem}.{suffix}")
    out = tmp_path / "report"
    done = CliRunner().invoke(cli, ["report", str(run), "--dataset", str(VECTORS / "dataset.jsonl"), "--out",
                                    str(out), "--format", "md,csv,json,html"])
    assert done.exit_code == 0, done.output
    assert done.output == (EXPECTED / "stdout.txt").read_text(encoding="utf-8") + \
        f"report: 10 file(s) in {out}\n"
    expected = sorted(p.name for p in EXPECTED.iterdir() if p.name not in ("stdout.txt", "report.html.sha256"))
    assert sorted(p.name for p in out.iterdir()) == sorted([*expected, "report.html"])
    for name in expected:
        assert (out / name).read_bytes() == (EXPECTED / name).read_bytes(), name
    assert hashlib.sha256((out / "report.html").read_bytes()).hexdigest() == \
        (EXPECTED / "report.html.sha256").read_text().strip()


def test_every_list_of_columns_is_read_from_the_records() -> None:
    from wtb_local.analysis.exports import leaderboard, mlflow_run
    from wtb_local.analysis.reports import glossary, health, paper, sections, table

    assert keys_of("table6") == paper.TABLE6_COLUMNS == leaderboard.COLUMNS == (
        "single", "multi", "clarify", "chat", "order1", "order2", "order3", "order4", "task_acc", "session_acc")
    assert headers_of("table7") == table.HEADERS[7] == ("P", "S", "S+P", "multi", "AP S", "AP S+P", "AP", "OP P",
                                                        "OP S+P", "OP")
    assert [key for key, _ in health.HEALTH_COLUMNS] == list(keys_of("health"))
    assert [key for key, _ in sections.SUBTYPE_COLUMNS] == list(keys_of("subtypes"))
    assert [key for key, _ in sections.VERSION_COLUMNS] == list(keys_of("versions"))
    # exported: the numeric health figures only (the failure reasons and the status are text)
    assert mlflow_run._HEALTH == tuple(key for key in keys_of("health") if key not in ("failed_reasons", "status"))
    assert all(column.exported for column in columns_of("table6") + columns_of("table7"))
    assert not any(column.exported for column in columns_of("subtypes") + columns_of("versions"))
    for column in REPORT_COLUMNS:
        assert glossary.definition(column.key) == column.definition, column.key
    assert len({(c.section, c.key) for c in REPORT_COLUMNS}) == len(REPORT_COLUMNS)


def test_the_versions_section_reads_each_column_from_its_source() -> None:
    from wtb_local.analysis.reports.runs import Run
    from wtb_local.analysis.reports.sections import versions_section
    from wtb_local.contract.run_dir import as_manifest

    manifest = as_manifest({"versions": {
        "engine": {"name": "vllm", "version": "0.32.0", "constrained_decoding": False},
        "parser": {"name": "hermes", "implementation": "wtb_local", "version": "0.1.0"}}})
    run = Run("m", "m", "org/m", Path("m"), {}, manifest=manifest)
    assert versions_section([run]).rows == [{
        "label": "m", "kind": "ours", "engine": "vllm", "engine_version": "0.32.0", "constrained": False,
        "parser": "hermes", "parser_implementation": "wtb_local", "parser_version": "0.1.0"}]
