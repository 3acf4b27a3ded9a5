"""`export --to mlflow` and `run --mlflow-uri` against a real `mlflow server` this test starts on the
loopback (a sqlite store and a local artifact folder, a free port), read back through MLflow's own client:
one MLflow run per wtb_local run, twice without duplicates (docs/exports.md). Needs the export extra;
skipped without mlflow unless WTB_REQUIRE_EXPORT=1 (the export stage of .ci/run)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.exports.runs import VECTORS, oracle_demo, recorded_run, wtb

pytestmark = pytest.mark.export
if os.environ.get("WTB_REQUIRE_EXPORT", "") != "1":  # set by the export stage of .ci/run
    pytest.importorskip("mlflow", reason="the export extra is not installed (pip install -e '.[export]')")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    mlflow = shutil.which("mlflow", path=os.path.dirname(sys.executable)) or "mlflow"
    log = (store / "server.log").open("w")
    process = subprocess.Popen(
        [mlflow, "server", "--backend-store-uri", f"sqlite:///{store / 'mlflow.db'}", "--artifacts-destination",
         str(store / "artifacts"), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            assert process.poll() is None, (store / "server.log").read_text()
            assert time.monotonic() < deadline, "mlflow server did not start in 180 s"
            time.sleep(0.5)
        yield uri
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()
    assert process.poll() is not None  # the server is stopped


def _runs(uri: str) -> list:
    from mlflow import MlflowClient
    from mlflow.entities import ViewType

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("wtb_local")
    return [] if experiment is None else list(client.search_runs([experiment.experiment_id],
                                                                 run_view_type=ViewType.ALL))


def test_runs_export_once_and_update_on_the_second_export(server: str, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    demo = oracle_demo(tmp_path)
    recorded, dataset = recorded_run(tmp_path)
    first = wtb(["export", str(demo), "--to", "mlflow", "--tracking-uri", server], tmp_path)
    assert first.returncode == 0, first.stderr
    assert "run " in first.stdout and " created in experiment wtb_local" in first.stdout
    done = wtb(["export", str(recorded), "--dataset", str(dataset), "--to", "mlflow", "--tracking-uri", server],
               tmp_path)
    assert done.returncode == 0, done.stderr
    # the harness's files have no manifest or summary: named on stderr
    assert ("not carried: scripted: artifact manifest.json: not in the run directory; artifact summary.md: not "
            "in the run directory; artifact summary.json: not in the run directory") in done.stderr
    again = wtb(["export", str(demo), "--to", "mlflow", "--tracking-uri", server], tmp_path)
    assert again.returncode == 0, again.stderr
    assert " updated in experiment wtb_local" in again.stdout

    runs = {run.data.tags["mlflow.runName"]: run for run in _runs(server)}
    assert sorted(runs) == ["Qwen_Qwen3-8B", "scripted"]  # twice exported, once there
    client = MlflowClient(tracking_uri=server)
    manifest = json.loads((demo / "manifest.json").read_text())
    ours = runs["Qwen_Qwen3-8B"]
    assert ours.info.status == "FINISHED"
    tags = ours.data.tags
    assert (tags["model"], tags["protocol"], tags["checker"], tags["engine"]) == ("Qwen/Qwen3-8B", "release",
                                                                                  "strict", "oracle")
    assert tags["version.wtb_local"] == manifest["wtb_local"]["version"]
    assert tags["version.pydantic"] == manifest["packages"]["pydantic"]
    params = ours.data.params
    assert params["config.model"] == "Qwen/Qwen3-8B" and params["config.backend"] == "oracle"
    assert params["config.sampling.max_new_tokens"] == str(manifest["config"]["sampling"]["max_new_tokens"])
    assert params["settings.out"] == manifest["settings"]["out"]
    assert ours.data.metrics["table6.task_acc"] == 100.0 and ours.data.metrics["tasks"] == 32.0
    assert ours.data.metrics["health.failed_requests"] == 0.0
    assert len(client.get_metric_history(ours.info.run_id, "table6.task_acc")) == 1  # updated, not appended
    assert sorted(a.path for a in client.list_artifacts(ours.info.run_id)) == [
        "manifest.json", "report.html", "summary.json", "summary.md"]
    fetched = Path(client.download_artifacts(ours.info.run_id, "manifest.json", str(tmp_path)))
    assert json.loads(fetched.read_text()) == manifest

    started = manifest["invocations"][0]["started"]
    assert ours.info.start_time == int(datetime.fromisoformat(started).timestamp() * 1000)

    # a setting changed since the first export: MLflow keeps the parameter, the export says so
    changed = {**manifest, "settings": {**manifest["settings"], "limit": 3}}
    (demo / "manifest.json").write_text(json.dumps(changed))
    third = wtb(["export", str(demo), "--to", "mlflow", "--tracking-uri", server], tmp_path)
    assert third.returncode == 0, third.stderr
    assert ("not carried: Qwen_Qwen3-8B: param settings.limit: MLflow keeps the first export's value 'null', "
            "now '3'\n") in third.stderr
    assert len(_runs(server)) == 2

    metric = json.loads((VECTORS / "metric.json").read_text())
    theirs = runs["scripted"].data.metrics
    assert theirs["table6.task_acc"] == pytest.approx(100 * metric["total_info"]["task"]["accuracy"], abs=1e-4)
    assert theirs["table6.session_acc"] == pytest.approx(4.6875)
    assert theirs["table7.acc_multi_P"] == pytest.approx(
        100 * metric["task_type_info"]["Parallel Multi-Tool"]["accuracy"], abs=1e-4)
    assert theirs["sessions"] == 64.0


def test_run_logs_itself_with_mlflow_uri_outside_the_config_hash(server: str, tmp_path: Path) -> None:
    before = {run.info.run_id for run in _runs(server)}
    plain = wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "1",
                 "--out", str(tmp_path / "plain")], tmp_path)
    assert plain.returncode == 0, plain.stderr
    logged = wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "1",
                  "--out", str(tmp_path / "logged"), "--mlflow-uri", server], tmp_path)
    assert logged.returncode == 0, logged.stderr
    hashes = [json.loads((tmp_path / name / "manifest.json").read_text())["config_hash"]
              for name in ("plain", "logged")]
    assert hashes[0] == hashes[1]
    new = [run for run in _runs(server) if run.info.run_id not in before]
    assert [run.data.tags["run_dir"] for run in new] == [str(tmp_path / "logged")]
    assert new[0].data.metrics["tasks"] == 4.0


def test_an_unreachable_server_is_one_line_and_the_run_is_kept(tmp_path: Path) -> None:
    uri = f"http://127.0.0.1:{_free_port()}"
    done = wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "1",
                "--out", str(tmp_path / "run"), "--mlflow-uri", uri], tmp_path,
               {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"})
    assert done.returncode == 1
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert line.startswith(f"Error: --mlflow-uri {uri}: not logged (")
    assert line.endswith(f"the run is complete: `python -m wtb_local export {tmp_path / 'run'} --to mlflow "
                         f"--tracking-uri {uri}` logs it later")
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["status"] == "complete"
