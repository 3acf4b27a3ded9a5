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

    # Readers' shorthands for values several commands read; each says where older manifests kept it.
    def section(self, name: str) -> dict[str, Any]:
        """A top-level object (`config`, `protocol`, `versions` ...); {} when absent or not an object."""
        value = getattr(self, name, None) if name in type(self).model_fields else (self.model_extra or {}).get(name)
        return value if isinstance(value, dict) else {}

    def extra(self, name: str) -> Any:
        """A top-level field the model does not check, as written (None when absent)."""
        return (self.model_extra or {}).get(name)

    @property
    def model_id(self) -> str | None:
        """The model as asked (`config.model`; `model.id` in older manifests)."""
        value = self.section("config").get("model") or self.section("model").get("id")
        return value if isinstance(value, str) and value else None

    @property
    def model_name(self) -> str | None:
        """The model's name (`config.model_name`; `model.name` in older manifests)."""
        value = self.section("config").get("model_name") or self.section("model").get("name")
        return value if isinstance(value, str) and value else None

    @property
    def protocol_name(self) -> str | None:
        """The protocol (`protocol.name`, else `config.protocol`)."""
        value = self.section("protocol").get("name") or self.section("config").get("protocol")
        return str(value) if value else None

    @property
    def parser(self) -> Any:
        """The tool-call parser (`config.parser`; a top-level `parser` in older manifests)."""
        return self.section("config").get("parser") or (self.model_extra or {}).get("parser")

    @property
    def sampling(self) -> dict[str, Any]:
        """The sampling settings (`config.sampling`; a top-level `sampling` in older manifests)."""
        value = self.section("config").get("sampling") or (self.model_extra or {}).get("sampling")
        return value if isinstance(value, dict) else {}

    @property
    def dataset_path(self) -> str | None:
        """The dataset file the run read (`dataset.path`), as recorded (it may no longer exist)."""
        value = self.section("dataset").get("path")
        return value if isinstance(value, str) and value else None

    @property
    def dataset_source(self) -> str | None:
        """`sample`, `release` or a file (`dataset.source`)."""
        value = self.section("dataset").get("source")
        return str(value) if value else None

    @property
    def dataset_sha256(self) -> str | None:
        """The dataset's sha256 (`config.dataset_sha256`, else `dataset.sha256`)."""
        value = self.section("config").get("dataset_sha256") or self.section("dataset").get("sha256")
        return value if isinstance(value, str) and value else None

    @property
    def first_started(self) -> str | None:
        """When the run's first command started."""
        return next((i.started for i in self.invocations if i.started), None)

    def as_written(self) -> dict[str, Any]:
        """The manifest as its JSON holds it (no defaults added): for exports that copy parts of it."""
        return self.model_dump(exclude_unset=True)


class ResultRow(BaseModel):
    """One line of a result file: a finished session (`result`: its tasks, or the reference's error string
    for a crashed session) or, in a score file, its scored tasks (`results`)."""

    model_config = ConfigDict(extra="allow")

    id: StrictStr
    result: list[Any] | StrictStr | None = None
    results: list[Any] | StrictStr | None = None
