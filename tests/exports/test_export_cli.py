"""The `export` command's own lines, without the export extra: a missing package is one line naming the
install command (for `export` and for `run --mlflow-uri`, before anything runs), a missing destination or
tracking URI is a usage error, and the command is listed by `--help` (docs/exports.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner

from wtb_local.cli import cli
from wtb_local.contract.install_command import install_command


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name in modules else real(name, *args))


def test_help_lists_export() -> None:
    done = CliRunner().invoke(cli, ["--help"])
    assert done.exit_code == 0
    shown = " ".join(done.output.split())  # click wraps the help column
    assert " export Export finished runs: Inspect logs, MLflow runs, the benchmark's leaderboard row. " in shown


@pytest.mark.parametrize(("target", "package", "args"), [
    ("inspect", "inspect_ai", ["logs"]), ("mlflow", "mlflow", ["--tracking-uri", "http://127.0.0.1:9"])])
def test_a_missing_package_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, target: str, package: str,
                                       args: list[str]) -> None:
    _without(monkeypatch, package)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run").mkdir()
    done = CliRunner().invoke(cli, ["export", "run", "--to", target, *args])
    assert done.exit_code == 1
    assert done.output == f"Error: --to {target}: {package} is not installed ({install_command('export')})\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_run_with_mlflow_uri_without_mlflow_stops_before_the_run(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    _without(monkeypatch, "mlflow")
    out = tmp_path / "run"
    done = CliRunner().invoke(cli, ["run", "--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample",
                                    "--limit", "1", "--out", str(out), "--mlflow-uri", "http://127.0.0.1:9"])
    assert done.exit_code == 1
    assert done.output == f"Error: --to mlflow: mlflow is not installed ({install_command('export')})\n"
    assert not out.exists()


def test_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WTB_MLFLOW_URI", raising=False)
    (tmp_path / "run").mkdir()
    runner = CliRunner()
    done = runner.invoke(cli, ["export", "run", "--to", "leaderboard"])
    assert done.exit_code == 2
    assert done.output.endswith("Error: --to leaderboard needs RUN_DIR... DEST: DEST is a file for the row(s) "
                                "(.csv or .json)\n")
    done = runner.invoke(cli, ["export", "run", "--to", "mlflow"])
    assert done.exit_code == 2
    assert done.output.endswith("Error: --to mlflow needs --tracking-uri URI (or WTB_MLFLOW_URI)\n")
    done = runner.invoke(cli, ["export", "missing", "row.json", "--to", "leaderboard"])
    assert done.exit_code == 2
    assert done.output.endswith("Error: missing: no such run directory or file\n")


def test_export_help_imports_neither_package() -> None:
    import subprocess
    import sys

    from tests.exports.runs import ROOT

    code = ("import sys; from wtb_local.cli import main\n"
            "try:\n    main(['export', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('inspect_ai', 'mlflow', 'torch', 'vllm') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--tracking-uri" in done.stdout
    assert done.stdout.splitlines()[-1] == "[]"


def test_the_exporters_are_one_registry_imported_only_when_used() -> None:
    """`--to` offers the registry's exporters, in its order; building one imports only its own module (the
    leaderboard needs neither inspect_ai nor mlflow)."""
    import subprocess
    import sys

    from tests.exports.runs import ROOT
    from wtb_local.analysis.exports.registry import EXPORTERS
    from wtb_local.cli.export import export

    (to,) = [param for param in export.params if param.name == "target"]
    choices = list(to.type.choices)  # type: ignore[attr-defined]
    assert choices == list(EXPORTERS) == ["inspect", "mlflow", "leaderboard"]
    assert [entry.run_option for entry in EXPORTERS.values()] == [None, "mlflow_uri", None]
    code = ("import sys\nfrom wtb_local.analysis.exports.registry import EXPORTERS, Target\n"
            "exporter = EXPORTERS['leaderboard'].build(Target(dest='row.json'))\nexporter.check()\n"
            "print(type(exporter).__name__, sorted(m for m in ('inspect_ai', 'mlflow') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "LeaderboardExporter []"
