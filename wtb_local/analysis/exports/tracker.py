"""The probe of an MLflow tracking URI, run before any work (`export --to mlflow`, and `run --mlflow-uri`
before the run starts): a server that cannot be reached (connection refused, a host name that does not
resolve, no answer within a few seconds), one that refuses the credentials or is no MLflow server, and a
store the installed MLflow does not accept (a plain folder: MLflow 3 refuses file stores) are refused in one
line naming the URI, masked (contract/secrets.py), and what to do. Without it MLflow's client retries for
about four minutes and ends in a traceback (docs/exports.md, "Trackers that fail fast").

A server is probed with one plain HTTP request (no mlflow import); any other store through MLflow's own
client, with its retries off and its timeout the probe's."""

from __future__ import annotations

import base64
import json
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from wtb_local.analysis.exports.registry import ExportError
from wtb_local.contract.secrets import mask_text, mask_url

PROBE_TIMEOUT_S = 5.0
_SERVER_ADVICE = "start the server or correct the URI"
_STORE_ADVICE = "give a tracking server (http://HOST:PORT) or a database store (sqlite:///PATH/mlflow.db)"


def probe_tracker(uri: str, experiment: str, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Return when `uri` can take an export; else raise ExportError: `URI (masked): why; what to do`."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme in ("http", "https"):
        _probe_server(uri, experiment, timeout)
    elif scheme in ("", "file") or len(scheme) == 1:  # a path (`C:` reads as a one-letter scheme)
        _probe_store(uri, experiment, timeout, folder=True)
    else:  # sqlite:///, postgresql://, databricks, ...: whatever the installed MLflow accepts
        _probe_store(uri, experiment, timeout, folder=False)


def _refuse(uri: str, why: str, advice: str) -> ExportError:
    return ExportError(f"{mask_url(uri)}: {mask_text(why)}; {advice}")


def _probe_server(uri: str, experiment: str, timeout: float) -> None:
    """One request to MLflow's REST API (the experiment by name): any answer MLflow gives (found, or
    RESOURCE_DOES_NOT_EXIST) is a server that takes the export."""
    parts = urlsplit(uri)
    headers = {"Accept": "application/json"}
    netloc = parts.netloc
    if "@" in netloc:  # user info: sent as MLflow's client sends it (basic auth), never in the request line
        userinfo, netloc = netloc.rsplit("@", 1)
        headers["Authorization"] = "Basic " + base64.b64encode(
            unquote(userinfo).encode()).decode()
    base = urlunsplit(parts._replace(netloc=netloc, query="", fragment="")).rstrip("/")
    url = f"{base}/api/2.0/mlflow/experiments/get-by-name?experiment_name={quote(experiment)}"
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            reply.read(1 << 16)
        return
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read(1 << 16)
    except (urllib.error.URLError, OSError) as exc:
        raise _refuse(uri, _network_failure(exc, timeout), _SERVER_ADVICE) from None
    if status in (401, 403):
        raise _refuse(uri, f"the server refused the credentials (HTTP {status})",
                      "give the account's user and password in the URI or in MLFLOW_TRACKING_USERNAME/"
                      "MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN")
    if status == 404 and _mlflow_error(body):
        return  # the experiment does not exist yet: the export creates it
    if status >= 500:
        raise _refuse(uri, f"the server answered HTTP {status}", "check the tracking server's log")
    raise _refuse(uri, f"no MLflow tracking server there (HTTP {status} on its REST API)",
                  "give the tracking server's address (the URL `mlflow server` prints)")


def _mlflow_error(body: bytes) -> bool:
    try:
        answer = json.loads(body)
    except ValueError:
        return False
    return isinstance(answer, dict) and "error_code" in answer


def _network_failure(exc: BaseException, timeout: float) -> str:
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, socket.gaierror):
        return "its host name does not resolve"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, TimeoutError | socket.timeout):
        return f"no answer within {timeout:g} s"
    return f"cannot be reached ({' '.join(str(reason).split())})"


@contextmanager
def _quick_client_requests(timeout: float) -> Iterator[None]:
    """MLflow's client without retries and with the probe's timeout, for the probe only."""
    saved = {name: os.environ.get(name) for name in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES",
                                                     "MLFLOW_HTTP_REQUEST_TIMEOUT")}
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(max(1, round(timeout)))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _probe_store(uri: str, experiment: str, timeout: float, folder: bool) -> None:
    """The store as the installed MLflow opens it: one read of the experiment. A folder MLflow refuses
    (MLflow 3 has no file store) is said as such."""
    import mlflow
    from mlflow import MlflowClient

    try:
        with _quick_client_requests(timeout):
            MlflowClient(tracking_uri=uri).get_experiment_by_name(experiment)
    except Exception as exc:  # noqa: BLE001 (MLflow raises its own and its stores' errors: each is said)
        text = " ".join(str(exc).split()).split(". ")[0][:300].rstrip(".") or type(exc).__name__  # its first sentence
        if folder:
            where = Path(urlsplit(uri).path if uri.startswith("file:") else uri)
            raise _refuse(uri, f"a folder{'' if where.is_dir() else ' (not there)'} as the store, which the "
                          f"installed MLflow {mlflow.__version__} does not accept ({text})", _STORE_ADVICE) from None
        raise _refuse(uri, f"MLflow {mlflow.__version__} cannot use this store ({text})", _STORE_ADVICE) from None


__all__ = ["PROBE_TIMEOUT_S", "probe_tracker"]
