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

from tests.exports.runs import VECTORS, metric_file, oracle_demo, recorded_run, rescored_run, wtb

# the export tier's limit: the server's start-up and MLflow's import take tens of seconds on a loaded machine
pytestmark = [pytest.mark.export, pytest.mark.timeout(300)]
if os.environ.get("WTB_REQUIRE_EXPORT", "") != "1":  # set by the export stage of .ci/run
    pytest.importorskip("mlflow", reason="the export extra is not installed (pip install -e '.[export]')")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


STORE: dict[str, Path] = {}  # the server's store folder (its database and artifacts), for the secrets test


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("mlflow")
    STORE["folder"] = store
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


def test_a_rescored_run_is_an_mlflow_run_per_score_set_and_twice_changes_nothing(server: str,
                                                                                  tmp_path: Path) -> None:
    from mlflow import MlflowClient

    run = rescored_run(tmp_path)
    before = {r.info.run_id for r in _runs(server)}
    first = wtb(["export", str(run), "--to", "mlflow", "--tracking-uri", server], tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count(" created in experiment wtb_local") == 2
    new = {r.data.tags["mlflow.runName"]: r for r in _runs(server) if r.info.run_id not in before}
    assert sorted(new) == ["Qwen_Qwen3-8B", "Qwen_Qwen3-8B [release-lenient]"]
    client = MlflowClient(tracking_uri=server)
    for label, metric, checker, score_set in (("Qwen_Qwen3-8B", metric_file(run), "strict", "score"),
                                              ("Qwen_Qwen3-8B [release-lenient]",
                                               metric_file(run, "score-lenient/score"), "lenient",
                                               "score-lenient")):
        tags, metrics = new[label].data.tags, new[label].data.metrics
        assert (tags["checker"], tags["wtb_local.score_set"]) == (checker, score_set)
        assert metrics["table7.ap_overall"] == pytest.approx(100 * metric["progress_info"]["Total"]["rate"],
                                                             abs=1e-4)
        assert metrics["table6.task_acc"] == pytest.approx(100 * metric["total_info"]["task"]["accuracy"],
                                                           abs=1e-4)
        assert len(client.get_metric_history(new[label].info.run_id, "table7.ap_overall")) == 1
    assert new["Qwen_Qwen3-8B"].data.metrics["table7.ap_overall"] != \
        new["Qwen_Qwen3-8B [release-lenient]"].data.metrics["table7.ap_overall"]
    assert len({r.data.tags["wtb_local.run"] for r in new.values()}) == 1  # both records of one run

    again = wtb(["export", str(run), "--to", "mlflow", "--tracking-uri", server], tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count(" updated in experiment wtb_local") == 2
    after = {r.info.run_id: r for r in _runs(server) if r.info.run_id not in before}
    assert sorted(after) == sorted(r.info.run_id for r in new.values())  # the same two runs
    for mlflow_run in after.values():
        for name in mlflow_run.data.metrics:
            assert len(client.get_metric_history(mlflow_run.info.run_id, name)) == 1, name
        assert mlflow_run.data.metrics == new[mlflow_run.data.tags["mlflow.runName"]].data.metrics


def _refused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    return _free_port()


def test_an_unreachable_server_is_refused_before_the_run_in_one_line(tmp_path: Path) -> None:
    uri = f"http://127.0.0.1:{_refused_port()}"
    started = time.monotonic()
    done = wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "1",
                "--out", str(tmp_path / "run"), "--mlflow-uri", uri], tmp_path)
    assert time.monotonic() - started < 10
    assert done.returncode == 1
    assert done.stderr == (f"Error: --mlflow-uri {uri}: connection refused; start the server or correct the "
                           "URI\n")
    assert done.stdout == ""
    assert not (tmp_path / "run").exists()  # nothing ran


@pytest.mark.parametrize("how", ["refused", "unresolvable", "folder"])
def test_export_to_a_tracker_that_cannot_take_it_is_one_line_before_any_work(tmp_path: Path, how: str) -> None:
    demo = tmp_path / "not-read"  # never read: the probe refuses first
    demo.mkdir()
    uri, why = {
        "refused": (f"http://127.0.0.1:{_refused_port()}", "connection refused; start the server or correct the URI"),
        "unresolvable": ("http://no-such-host.invalid:5000", ("its host name does not resolve; start the server or "
                                                             "correct the URI")),
        "folder": (str(tmp_path / "mlruns"), "a folder (not there) as the store, which the installed MLflow "),
    }[how]
    started = time.monotonic()
    done = wtb(["export", str(demo), "--to", "mlflow", "--tracking-uri", uri], tmp_path)
    # a server is probed without MLflow; a folder through MLflow's client, whose import is most of the time
    assert time.monotonic() - started < (30 if how == "folder" else 10)
    assert done.returncode == 1 and done.stdout == ""
    (line,) = [line for line in done.stderr.splitlines() if not line.startswith("20")]  # MLflow's own log lines
    assert line.startswith(f"Error: --tracking-uri {uri}: {why}")
    if how == "folder":
        assert line.endswith("; give a tracking server (http://HOST:PORT) or a database store "
                             "(sqlite:///PATH/mlflow.db)")
    assert "Traceback" not in done.stderr


def test_planted_secrets_appear_in_no_output_and_no_file(server: str, tmp_path: Path) -> None:
    password, token = "pw-s3cret-4711", "tok-s3cret-0815"
    secret_uri = server.replace("http://", f"http://alice:{password}@")
    outputs = []
    logged = wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "1",
                  "--out", str(tmp_path / "logged"), "--mlflow-uri", secret_uri], tmp_path)
    assert logged.returncode == 0, logged.stderr
    exported = wtb(["export", str(tmp_path / "logged"), "--to", "mlflow", "--tracking-uri", secret_uri], tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert f"at {server.replace('http://', 'http://alice:***@')}" in exported.stdout
    down = f"http://alice:{password}@127.0.0.1:{_refused_port()}/?api_key={token}"
    refused_run = wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "1",
                       "--out", str(tmp_path / "never"), "--mlflow-uri", down], tmp_path)
    refused_export = wtb(["export", str(tmp_path / "logged"), "--to", "mlflow", "--tracking-uri", down], tmp_path)
    for done in (refused_run, refused_export):
        assert done.returncode == 1
        assert "127.0.0.1" in done.stderr and "alice:***@" in done.stderr and "api_key=***" in done.stderr
    outputs += [logged, exported, refused_run, refused_export]
    for done in outputs:
        assert password not in done.stdout + done.stderr and token not in done.stdout + done.stderr
    # every file written: the run directory, the server's store (database and artifacts), what MLflow records
    for folder in (tmp_path, STORE["folder"]):
        for path in folder.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert password.encode() not in data and token.encode() not in data, path
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=server)
    for mlflow_run in _runs(server):
        recorded = json.dumps([mlflow_run.data.params, mlflow_run.data.tags])
        assert password not in recorded
        if mlflow_run.data.tags.get("run_dir") == str(tmp_path / "logged"):
            manifest = Path(client.download_artifacts(mlflow_run.info.run_id, "manifest.json", str(tmp_path / "dl")))
            assert password not in manifest.read_text()
