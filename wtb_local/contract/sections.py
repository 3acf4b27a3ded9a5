"""The manifest's sections as small read-only models (docs/files.md, "Manifest"): each declares the keys
readers rely on, with their types, so a renamed key is an attribute error in a type checker rather than a
silent `None`, and a section of the wrong shape is refused when the manifest is read, in one line naming
the field (contract/run_dir.py, `check_manifest`). Every other key is kept as written (`extra="allow"`):
a manifest carries facts only some commands read, and older or newer ones carry keys not declared here.

A section that is absent or `null` reads as an empty section (every field None), so a reader writes
`manifest.protocol.checker`, never `.get` chains; what the file holds is `Manifest.as_written()`.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    PrivateAttr,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

# Keys of a section that are sections themselves (a null one reads as empty).
_SUBSECTIONS: dict[str, tuple[str, ...]] = {
    "ConfigSection": ("sampling",), "ProtocolSection": ("family",), "VersionsSection": ("engine", "parser"),
    "SummarySection": ("task_accuracy", "session_accuracy", "throughput", "length_cuts"),
    "BackendSection": ("settings",),
}


class Section(BaseModel):
    """A manifest section: declared keys checked, unknown keys kept, nothing changed after reading."""

    model_config = ConfigDict(extra="allow", frozen=True)

    _written: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_written(cls, data: Any, handler: Any) -> Any:
        if not isinstance(data, dict):
            return handler(data)
        inner = _SUBSECTIONS.get(cls.__name__, ())  # a null sub-section (`"family": null`) reads as empty
        model = handler({k: {} if v is None and k in inner else v for k, v in data.items()})
        model._written = data  # the manifest's private copy (Manifest); written() hands out copies
        return model

    def __bool__(self) -> bool:
        """False for an absent, null or empty section."""
        return bool(self._written)

    def extra(self, name: str) -> Any:
        """A key this section does not declare, as written (None when absent)."""
        return (self.model_extra or {}).get(name)

    def written(self) -> dict[str, Any]:
        """The section as the file holds it, keys in its order (a copy; {} when absent or null)."""
        return copy.deepcopy(self._written)


Number = StrictInt | StrictFloat


class Sampling(Section):
    """`config.sampling`: the requested sampling."""

    temperature: Number | None = None
    top_p: Number | None = None
    max_new_tokens: StrictInt | None = None
    seed: StrictInt | None = None


class ConfigSection(Section):
    """`config`: the hashed settings that decide the results (run/setup/config.py)."""

    model: StrictStr | None = None
    model_name: StrictStr | None = None
    backend: StrictStr | None = None
    parser: StrictStr | None = None
    parser_version: StrictStr | None = None
    protocol: StrictStr | None = None
    revision: StrictStr | None = None
    resolved_revision: StrictStr | None = None
    tokenizer_sha256: StrictStr | None = None
    template_sha256: StrictStr | None = None
    template_kwargs: dict[str, Any] | None = None
    dataset_sha256: StrictStr | None = None
    replay_sha256: StrictStr | None = None
    sampling: Sampling = Sampling()
    dtype: StrictStr | None = None
    quantization: StrictStr | None = None
    chat_template: StrictStr | None = None
    max_model_len: StrictInt | None = None
    trust_remote_code: StrictBool | None = None


class SettingsSection(Section):
    """`settings`: the command's other options (not hashed)."""

    replay: StrictStr | None = None
    revision: StrictStr | None = None
    resolved_dtype: StrictStr | None = None
    thinking: StrictBool | None = None
    trust_remote_code: StrictBool | None = None
    out: StrictStr | None = None


class RescoredEntry(Section):
    """`protocol.rescored.<checker>`: one re-scoring made with `rescore`."""

    metric: StrictStr | None = None
    task_accuracy: Number | None = None


class FamilyRule(Section):
    """`protocol.family`: the paper protocol's per-family rule (benchmark/protocols/families.py)."""

    name: StrictStr | None = None
    documented: StrictBool | None = None


class ProtocolSection(Section):
    """`protocol`: the protocol that produced the run, its checker and (paper) the family rule applied;
    in a re-scoring's own manifest, `rescore_of` names the run it re-scored."""

    name: StrictStr | None = None
    checker: StrictStr | None = None
    family: FamilyRule = FamilyRule()
    documented: StrictBool | None = None
    special_tokens: list[StrictStr] | None = None
    rescore_of: StrictStr | None = None
    rescored: dict[str, RescoredEntry] | None = None


class ThinkingSection(Section):
    """`thinking`: the effective mode read from the rendered prompt, why, and what was asked."""

    effective: StrictBool | None = None
    evidence: StrictStr | None = None
    asked: StrictBool | None = None


class ShardSection(Section):
    """`shard`: which part of the selection a `--shard` run ran (run/setup/shards.py)."""

    index: StrictInt | None = None
    count: StrictInt | None = None
    selection_sha256: StrictStr | None = None
    selection_size: StrictInt | None = None
    sessions: list[StrictStr] | None = None
    work: Number | None = None


class DatasetSection(Section):
    """`dataset`: the dataset as given, the file read and its sessions."""

    source: StrictStr | None = None
    path: StrictStr | None = None
    sha256: StrictStr | None = None
    sessions_in_file: StrictInt | None = None
    sessions_selected: StrictInt | None = None


class EngineVersion(Section):
    """`versions.engine`."""

    name: StrictStr | None = None
    version: StrictStr | None = None
    constrained_decoding: Any = None  # what the engine constrained decoding with, as it names it


class ParserVersion(Section):
    """`versions.parser`: whose code read the replies (`wtb_local`, `vllm`) and its version."""

    name: StrictStr | None = None
    implementation: StrictStr | None = None
    version: StrictStr | None = None


class VersionsSection(Section):
    """`versions`: the engine's and the parser's name and version."""

    engine: EngineVersion = EngineVersion()
    parser: ParserVersion = ParserVersion()


class ProgramSection(Section):
    """`wtb_local`: the version of this program and the checkout it ran from."""

    version: StrictStr | None = None
    git_commit: StrictStr | None = None
    git_dirty: StrictBool | None = None


class FilesSection(Section):
    """`files`: where the run wrote its result and score files (absolute, as it was then)."""

    result: StrictStr | None = None
    score_dir: StrictStr | None = None


class Accuracy(Section):
    """`summary.task_accuracy`, `summary.session_accuracy`."""

    accuracy: Number | None = None
    correct_count: StrictInt | None = None
    total_count: StrictInt | None = None


class LengthCuts(Section):
    """`summary.length_cuts`: steps that ended at the token limit (benchmark/scoring/length_cuts.py)."""

    steps: StrictInt | None = None
    length: StrictInt | None = None
    length_in_reasoning: StrictInt | None = None
    share: Number | None = None


class ThroughputSection(Section):
    """`summary.throughput` and each invocation's: the figures `run` prints at its end (the meter writes them:
    run/loop/throughput.py, `ThroughputSummary`; None where a figure had nothing under it)."""

    wall_s: Number | None = None
    tasks: StrictInt | None = None
    steps: StrictInt | None = None
    tasks_per_s: Number | None = None
    generated_tokens_per_s: Number | None = None
    prompt_tokens_per_s: Number | None = None
    engine_busy_share: Number | None = None
    prefix_cache_hit_rate: Number | None = None
    runner_ms_per_step: Number | None = None
    runner_busy_share: Number | None = None
    steps_per_s: Number | None = None
    runner_ceiling_steps_per_s: Number | None = None


class SummarySection(Section):
    """`summary`: what `run` scored and measured."""

    sessions_scored: StrictInt | None = None
    task_accuracy: Accuracy = Accuracy()
    session_accuracy: Accuracy = Accuracy()
    throughput: ThroughputSection = ThroughputSection()
    length_cuts: LengthCuts = LengthCuts()


class BackendSettings(Section):
    """`backend.settings`: what the backend ran with."""

    dtype: StrictStr | None = None


class BackendSection(Section):
    """`backend`: the backend's own description of itself (its settings, writer, parser)."""

    settings: BackendSettings = BackendSettings()
    device: StrictStr | None = None

    def versions(self) -> list[tuple[str, Any]]:
        """(name without the suffix, value) of every `<name>_version` key the backend recorded, sorted."""
        return [(key.removesuffix("_version"), value) for key, value in sorted(self.written().items())
                if key.endswith("_version")]


class TemplateSection(Section):
    """`template`: the chat template's source, hash and adaptation (null without a renderer)."""

    source: StrictStr | None = None
    sha256: StrictStr | None = None


class ContextLengthSection(Section):
    """`context_length`: the engine's context window and how it was chosen (null when none was sized)."""

    value: StrictInt | None = None
    max_model_len: StrictInt | None = None
    how: StrictStr | None = None


class MachineSection(Section):
    """`machine`: where the run ran (engines/environment.py, `machine`)."""

    python: StrictStr | None = None
    platform: StrictStr | None = None
    cpu_count: StrictInt | None = None
    gpus: list[StrictStr] | None = None  # `name, memory, driver` per visible GPU


class SamplingUsedSection(Section):
    """`sampling_used`: what the requests were sampled with, and where it came from
    (run/record/run_record.py, `sampling_used`); a server backend records what it `sent`."""

    source: StrictStr | None = None
    do_sample: StrictBool | None = None
    temperature: Number | None = None
    top_p: Number | None = None
    top_k: StrictInt | None = None
    min_p: Number | None = None
    repetition_penalty: Number | None = None
    max_new_tokens: StrictInt | None = None
    seed: StrictInt | None = None
    sent: dict[str, Any] | None = None


# The sections read as models, by manifest key; an absent or null one reads as empty.
SECTIONS: dict[str, type[Section]] = {
    "config": ConfigSection, "settings": SettingsSection, "protocol": ProtocolSection,
    "thinking": ThinkingSection, "shard": ShardSection, "dataset": DatasetSection,
    "versions": VersionsSection, "wtb_local": ProgramSection, "files": FilesSection,
    "summary": SummarySection, "backend": BackendSection, "template": TemplateSection,
    "context_length": ContextLengthSection, "machine": MachineSection, "sampling_used": SamplingUsedSection,
}
# Objects whose keys are open-ended (package names, option names): read as a plain mapping.
MAPPINGS = ("packages", "sources", "parser_options")
