"""The manifest (`manifest.json` in a run directory) and the result rows, as pydantic models: what a reader
may rely on. Unknown fields are kept (a manifest carries many facts only some commands read); the fields
below are checked, so a hand-edited or damaged manifest is refused with one line naming the field instead of
being misread (docs/files.md, "Manifest").

`schema_version`: 2 for manifests written since invocations count `sessions_scheduled` and `sessions_run`
separately and record `internal_errors`; a manifest without it was written before (version 1) and still
loads. A newer version than this package reads is refused, naming it.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from wtb_local.contract.sections import (
    MAPPINGS,
    SECTIONS,
    BackendSection,
    ConfigSection,
    ContextLengthSection,
    DatasetSection,
    FilesSection,
    MachineSection,
    ProgramSection,
    ProtocolSection,
    Sampling,
    SamplingUsedSection,
    SettingsSection,
    ShardSection,
    SummarySection,
    TemplateSection,
    ThinkingSection,
    VersionsSection,
)

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
    """A run's manifest: the top level and its sections (contract/sections.py) checked, every other field
    kept as written. Read-only: the commands that update a manifest update the dict they read
    (`load_manifest_data`) and write it back checked against this model."""

    model_config = ConfigDict(extra="allow", frozen=True)

    schema_version: StrictInt = 1
    status: StrictStr | None = None
    config_hash: StrictStr | None = None
    parser: StrictStr | None = None  # the parser's name (also `config.parser`)
    parser_options: dict[str, Any] = {}
    config: ConfigSection = ConfigSection()
    settings: SettingsSection = SettingsSection()
    protocol: ProtocolSection = ProtocolSection()
    thinking: ThinkingSection = ThinkingSection()
    shard: ShardSection = ShardSection()
    dataset: DatasetSection = DatasetSection()
    versions: VersionsSection = VersionsSection()
    wtb_local: ProgramSection = ProgramSection()
    files: FilesSection = FilesSection()
    summary: SummarySection = SummarySection()
    backend: BackendSection = BackendSection()
    template: TemplateSection = TemplateSection()
    context_length: ContextLengthSection = ContextLengthSection()
    packages: dict[str, StrictStr | None] = {}  # the installed version of each, None when absent
    machine: MachineSection = MachineSection()
    sources: dict[str, StrictStr] = {}  # where each resolved value came from
    sampling_used: SamplingUsedSection = SamplingUsedSection()
    invocations: list[Invocation] = []
    # older manifests kept the requested sampling at the top level; read it through `sampling`
    top_level_sampling: Sampling = Field(default=Sampling(), alias="sampling")

    _written: dict[str, Any] = PrivateAttr(default_factory=dict)

    @field_validator(*SECTIONS, *MAPPINGS, "top_level_sampling", mode="before")
    @classmethod
    def _absent_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value  # `"template": null` (no renderer) reads as an empty section

    @model_validator(mode="wrap")
    @classmethod
    def _keep_written(cls, data: Any, handler: Any) -> Any:
        if not isinstance(data, dict):
            return handler(data)
        written = copy.deepcopy(data)  # the sections keep parts of this copy: a later change to `data` is not seen
        model = handler(written)
        model._written = written
        return model

    def extra(self, name: str) -> Any:
        """A top-level field the model does not declare, as written (None when absent)."""
        return (self.model_extra or {}).get(name)

    def has(self, name: str) -> bool:
        """Whether the file holds the top-level field `name` (even as null)."""
        return name in self._written

    # Readers' shorthands for values stored in more than one place across versions.
    @property
    def model_id(self) -> str | None:
        """The model as asked (`config.model`; `model.id` in older manifests)."""
        value = self.config.model or _old(self, "model", "id")
        return value if isinstance(value, str) and value else None

    @property
    def model_name(self) -> str | None:
        """The model's name (`config.model_name`; `model.name` in older manifests)."""
        value = self.config.model_name or _old(self, "model", "name")
        return value if isinstance(value, str) and value else None

    @property
    def protocol_name(self) -> str | None:
        """The protocol (`protocol.name`, else `config.protocol`)."""
        return self.protocol.name or self.config.protocol or None

    @property
    def parser_name(self) -> str | None:
        """The tool-call parser (`config.parser`; a top-level `parser` in older manifests)."""
        return self.config.parser or self.parser or None

    @property
    def sampling(self) -> Sampling:
        """The requested sampling (`config.sampling`; a top-level `sampling` in older manifests)."""
        return self.config.sampling if self.config.sampling else self.top_level_sampling

    @property
    def dataset_path(self) -> str | None:
        """The dataset file the run read (`dataset.path`), as recorded (it may no longer exist)."""
        return self.dataset.path or None

    @property
    def dataset_source(self) -> str | None:
        """`sample`, `release` or a file (`dataset.source`)."""
        return self.dataset.source or None

    @property
    def dataset_sha256(self) -> str | None:
        """The dataset's sha256 (`config.dataset_sha256`, else `dataset.sha256`)."""
        return self.config.dataset_sha256 or self.dataset.sha256 or None

    @property
    def checker(self) -> str | None:
        """The argument checker that scored the run, as recorded (`protocol.checker`)."""
        return self.protocol.checker or None

    @property
    def first_started(self) -> str | None:
        """When the run's first command started."""
        return next((i.started for i in self.invocations if i.started), None)

    def written_invocations(self) -> list[dict[str, Any]]:
        """The invocations as the file holds them (copies, keys in their order)."""
        value = self.as_written().get("invocations")
        return value if isinstance(value, list) else []

    def as_written(self) -> dict[str, Any]:
        """The manifest as its JSON holds it, in its order (a copy): for exports that copy parts of it."""
        return copy.deepcopy(self._written)


def _old(manifest: Manifest, section: str, key: str) -> Any:
    """`section.key` of a section older manifests kept and this model does not declare."""
    value = manifest.extra(section)
    return value.get(key) if isinstance(value, dict) else None


class ResultRow(BaseModel):
    """One line of a result file: a finished session (`result`: its tasks, or the reference's error string
    for a crashed session) or, in a score file, its scored tasks (`results`)."""

    model_config = ConfigDict(extra="allow")

    id: StrictStr
    result: list[Any] | StrictStr | None = None
    results: list[Any] | StrictStr | None = None
