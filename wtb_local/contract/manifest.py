"""The manifest (`manifest.json` in a run directory) and the result rows, as pydantic models: what a reader
may rely on. Unknown fields are kept (a manifest carries many facts only some commands read); the fields
below are checked, so a hand-edited or damaged manifest is refused with one line naming the field instead of
being misread (docs/files.md, "Manifest").

`schema_version`: 2 for manifests written since invocations count `sessions_scheduled` and `sessions_run`
separately and record `internal_errors`; a manifest without it was written before (version 1) and still
loads. A newer version than this package reads is refused, naming it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)  # 1: written before `schema_version` was recorded


class Invocation(BaseModel):
    """One command that added sessions to the run (`invocations[i]`)."""

    model_config = ConfigDict(extra="allow")

    started: StrictStr | None = None
    finished: StrictStr | None = None  # None: still running, or its process was killed (status "killed")
    status: StrictStr | None = None  # running, complete, incomplete, interrupted, failed, killed
    failure: StrictStr | None = None
    sessions_scheduled: StrictInt | None = None  # the sessions it set out to run (version 2)
    sessions_run: StrictInt | None = None  # version 2: the sessions it wrote; version 1: the ones scheduled
    requests: StrictInt | None = None
    failed_requests: StrictInt | None = None
    faults: dict[str, StrictInt] | None = None
    faults_recovered: StrictInt | None = None
    internal_errors: dict[str, StrictInt] | None = None  # {kind: steps} (faults.INTERNAL_KINDS)
    completions_reused: StrictInt | None = None  # completions kept by an earlier internal error, sent back


class Manifest(BaseModel):
    """A run's manifest. Only the fields below are checked; every other field is kept as written."""

    model_config = ConfigDict(extra="allow")

    schema_version: StrictInt = 1
    status: StrictStr | None = None
    config_hash: StrictStr | None = None
    config: dict[str, Any] | None = None
    settings: dict[str, Any] | None = None
    dataset: dict[str, Any] | None = None
    files: dict[str, Any] | None = None
    invocations: list[Invocation] = []
    summary: dict[str, Any] | None = None


class ResultRow(BaseModel):
    """One line of a result file: a finished session (`result`: its tasks, or the reference's error string
    for a crashed session) or, in a score file, its scored tasks (`results`)."""

    model_config = ConfigDict(extra="allow")

    id: StrictStr
    result: list[Any] | StrictStr | None = None
    results: list[Any] | StrictStr | None = None
