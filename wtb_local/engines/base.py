"""The one interface every generation backend implements, and what each declares about itself.

The runner keeps every episode in flight and awaits `generate` once per step; a backend batches the
requests that are pending at once (vLLM's continuous batching, a wave of left-padded `generate`, or
concurrent HTTP requests). What the model or its request did comes back as a Completion: a request that
cannot be served (a prompt longer than the context window) as one with `error` set and `finish_reason ==
"error"`. What the machine did (a dead engine, out of memory, a server that is down) is raised as a
`Fault` (wtb_local/contract/faults.py, docs/reliability.md): it never becomes a step's result.

A backend also describes itself (`capabilities`) and builds itself from the resolved run (`from_run`);
`prepare` asks it what it needs (`check`, `resolve`) instead of testing its name (docs/architecture.md,
"A new backend").
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Required

from typing_extensions import TypedDict

from wtb_local.contract.faults import FaultLog
from wtb_local.contract.messages import JSONObject
from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.engines.errors import SetupError
from wtb_local.engines.reproducibility import SERVER


class RerunClaim(TypedDict):
    """Whether a rerun with the same seed writes identical files (None: a server decides), and why: the
    manifest's `rerun` (docs/reproducibility.md §1)."""

    identical: bool | None
    why: str


# The memory share vLLM took: its value and where it came from ("from" is a Python keyword).
MemoryShare = TypedDict("MemoryShare", {"value": float | None, "from": str})


class SchedulerSettings(TypedDict, total=False):
    """The batch limits vLLM really runs with (empty when the engine does not say)."""

    max_num_seqs: int
    max_num_batched_tokens: int
    enable_chunked_prefill: bool
    enable_prefix_caching: bool
    block_size: int


class BackendDescription(TypedDict, total=False):
    """What a backend records of itself in the manifest (`describe()`): its name, then what each backend
    knows (an engine's settings and versions, a writer's counts, a replay's or script's file)."""

    backend: Required[str]
    settings: JSONObject  # the engine config as dumped (secrets excluded)
    # an engine in this process
    vllm_version: str
    transformers_version: str
    torch_version: str
    device: str
    device_name: str
    dtype: str
    gpu_memory_utilization: MemoryShare
    batch_invariant: bool
    max_model_len: int | None
    scheduler: SchedulerSettings
    generation_defaults: JSONObject  # the checkpoint's sampling defaults, by name
    # a server
    server_models: list[str]
    # the oracle and instant writers
    parser: str
    writer: str
    replies: str
    written: int
    looked_up: int
    template_cuts: int
    format_fallbacks: int
    # a replay, a script
    replay: str
    replay_sha256: str
    recorded_steps: int
    answered: int
    unrecorded: int
    script: str
    script_sha256: str


class EngineIdentity(TypedDict):
    """What generated the replies: the manifest's `versions.engine` (docs/reproducibility.md)."""

    name: str | None
    version: str | None
    constrained_decoding: str | None


@dataclass(frozen=True)
class Capabilities:
    """What a backend does, read by `prepare`, the loop and the manifest instead of its name."""

    renders_prompts: bool  # the runner renders each step with the model's chat template
    needs_tokenizer: Literal["yes", "if on disk", "no"]  # "if on disk": used when present (oracle)
    samples: bool  # sampling options (temperature, top-p, seeds, repeats) change its replies
    replays: bool  # answers with fixed, recorded replies
    step_synchronous: bool  # batches form from what is pending at once: scheduled in waves
    reports_token_usage: bool  # completions carry prompt and generated token counts
    parses_replies: bool = True  # the runner parses its text with a tool-call parser
    needs_model: bool = False  # `--model` is required
    # where the sampling defaults come from: the model's generation_config, the server's own, or none
    sampling_from: Literal["generation_config", "server", "none"] = "generation_config"
    remote: bool = False  # an engine configured outside this command (`--base-url`): named in the run folder
    needs_gpu: bool = False  # a CUDA GPU (`--backend auto` picks it only when one is visible)
    sizes_context: bool = False  # the run chooses its context window when --max-model-len is not given
    loads_weights: bool = False  # loads the checkpoint in this process: --dtype applies (run/setup/dtype.py)
    # packages it imports and the extra of wtb-local that brings them (install_command.py words the command)
    packages: tuple[tuple[str, ...], str] | None = None


class Backend(ABC):
    name: ClassVar[str]
    # the default: an engine that renders, samples and counts tokens (a test's stand-in backend)
    capabilities: ClassVar[Capabilities] = Capabilities(
        renders_prompts=True, needs_tokenizer="yes", samples=True, replays=False, step_synchronous=False,
        reports_token_usage=True, needs_model=True)
    produces_text: ClassVar[bool] = True  # False: Completion.reply holds an already-parsed reply
    needs_prompt: ClassVar[bool] = True  # False: the runner need not render prompts (scripted)
    # True: the runner fills GenerationRequest.gold_reply (oracle); not a ClassVar: the instant backend decides
    # it per instance (only while it writes its table)
    needs_gold: bool = False

    async def start(self) -> None:
        """Load weights / connect. Called once before the first request."""

    async def close(self) -> None:
        """Release the engine. Called once at the end, also after a failure."""

    @abstractmethod
    async def generate(self, request: GenerationRequest) -> Completion:
        """One completion for one request."""

    def activity(self) -> str | None:
        """What the engine is doing now, in a few words, for the progress line while no reply comes back
        (e.g. a transformers wave's prefill and decode step); None: it cannot say (the line then counts the
        requests in flight and their prompt tokens). Called from the display's thread: read, never block."""
        return None

    def describe(self) -> BackendDescription:
        """Settings and versions recorded in the run manifest."""
        return {"backend": self.name}

    @property
    def fault_log(self) -> FaultLog:
        """The faults this backend retried past (wtb_local/contract/faults.py); the run counts them in its manifest."""
        log = self.__dict__.get("_fault_log")
        if log is None:
            log = self.__dict__["_fault_log"] = FaultLog()
        return log

    # -- setting a run up (prepare.py); raise SetupError for options that cannot work ----------------

    @classmethod
    def check(cls, options: Any) -> None:
        """Cheap checks before the dataset is fetched and the tokenizer loaded (engines/preflight.py)."""
        from wtb_local.engines import preflight

        caps = cls.capabilities
        if caps.packages:
            preflight.require_packages(f"--backend {cls.name}", caps.packages)
        if caps.needs_model and not options.model:
            raise SetupError(f"--backend {cls.name} needs --model")
        if caps.needs_tokenizer == "yes":
            preflight.require_hub(options.model, options.revision)

    @classmethod
    def resolve(cls, values: dict[str, Any], sources: dict[str, str], stderr: Any) -> None:
        """Fill or correct the values only this backend decides (its script's hash, a replay's recording)."""

    @classmethod
    def select(cls, values: dict[str, Any], selected: list[Any], stderr: Any) -> list[Any]:
        """The sessions this backend can run out of the selection (a replay: the recorded ones)."""
        return selected

    @classmethod
    def engine(cls) -> EngineIdentity:
        """What generated the replies and whether decoding was constrained: the manifest's
        `versions.engine` (docs/reproducibility.md). A backend that runs no model has no engine."""
        if cls.capabilities.remote:
            return {"name": "a server", "version": "unknown (the server does not report it)",
                    "constrained_decoding": "unknown (the server does not report it)"}
        if cls.capabilities.replays:
            return {"name": "the recorded run's (its manifest)", "version": None, "constrained_decoding": None}
        return {"name": None, "version": None, "constrained_decoding": None}

    @classmethod
    def recorded_thinking(cls, values: dict[str, Any]) -> bool | None:
        """A recorded run's effective thinking mode (replays), None otherwise."""
        return None

    @classmethod
    def rerun_claim(cls, described: Mapping[str, Any], scheduling: str | None) -> RerunClaim:
        """Whether a rerun with the same seed writes identical files, and why (docs/reproducibility.md §1);
        `described`: the run's `describe()`. A backend that does not sample gives fixed replies; a server
        decides for itself."""
        if not cls.capabilities.samples:
            return {"identical": True, "why": f"the {cls.name} backend does not sample: its replies are fixed"}
        return {"identical": None, "why": SERVER}

    @classmethod
    def from_run(cls, run: Any, *, parser: Any, renderer: Any) -> Backend:
        """The backend for a resolved run (run/setup/resolved.py)."""
        raise SetupError(f"--backend {cls.name}: cannot be built from the run options")


def file_sha256(path: str) -> str:
    """A file's sha256 (a script's, a replayed result file's), recorded in the run's hashed config."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise SetupError(f"{path}: cannot read ({exc.strerror or exc})") from None
