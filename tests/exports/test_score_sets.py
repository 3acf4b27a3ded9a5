"""A run and each of its score sets are distinct records (docs/exports.md, "A run and its score sets"): after
`rescore --checker lenient`, `export --to inspect` writes one Inspect log per score set, each with its own
checker and the figures of its own metric file, and exporting again rewrites the same two files. Needs the
export extra; skipped without inspect_ai only outside CI. The MLflow half is in test_mlflow_export.py (it
needs that file's server)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.exports.runs import metric_file, rescored_run, wtb

pytestmark = pytest.mark.export
if os.environ.get("WTB_REQUIRE_EXPORT", "") != "1":  # set by the export stage of .ci/run
    pytest.importorskip("inspect_ai", reason="the export extra is not installed (pip install -e '.[export]')")


def test_a_rescored_run_exports_an_inspect_log_per_score_set_and_twice_changes_nothing(tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    run = rescored_run(tmp_path)
    logs = tmp_path / "logs"
    first = wtb(["export", str(run), "--to", "inspect", str(logs)], tmp_path)
    assert first.returncode == 0, first.stderr
    written = {line.split(": ")[1]: Path(line.rsplit(": ", 1)[1]) for line in first.stdout.splitlines()}
    assert sorted(written) == ["Qwen_Qwen3-8B", "Qwen_Qwen3-8B [release-lenient]"]
    assert len(set(written.values())) == 2 and sorted(logs.iterdir()) == sorted(written.values())

    strict = metric_file(run)
    lenient = metric_file(run, "score-lenient/score")
    assert strict["progress_info"]["Total"]["rate"] != lenient["progress_info"]["Total"]["rate"]  # AP differs
    for label, metric, checker, score_set in (("Qwen_Qwen3-8B", strict, "strict", "score"),
                                              ("Qwen_Qwen3-8B [release-lenient]", lenient, "lenient",
                                               "score-lenient")):
        log = read_eval_log(str(written[label]))
        assert log.eval.metadata["protocol"]["checker"] == checker
        assert log.eval.metadata["wtb_local_score_set"] == score_set
        assert log.eval.task_display_name == f"WildToolBench (release protocol, {checker} checker)"
        table7 = next(score for score in log.results.scores if score.name == "table7")
        assert table7.metrics["ap_overall"].value == pytest.approx(100 * metric["progress_info"]["Total"]["rate"],
                                                                   abs=1e-4)
        verdict = next(score for score in log.results.scores if score.name == "verdict")
        assert verdict.metrics["accuracy"].value == metric["total_info"]["task"]["accuracy"]
        assert sum(sample.scores["verdict"].value == "C" for sample in log.samples) == \
            metric["total_info"]["task"]["correct_count"]
    # both records belong to one run
    keys = {read_eval_log(str(p), header_only=True).eval.metadata["wtb_local_run_of"] for p in written.values()}
    assert len(keys) == 1

    before = {path: read_eval_log(str(path), header_only=True).eval.metadata for path in logs.iterdir()}
    again = wtb(["export", str(run), "--to", "inspect", str(logs)], tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout  # the same two files, rewritten with the same records
    assert {path: read_eval_log(str(path), header_only=True).eval.metadata for path in logs.iterdir()} == before
