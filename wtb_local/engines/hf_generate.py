"""transformers `generate`, the paper's own engine: batched, left-padded, one wave at a time.

Requests pending at the same moment are gathered into a wave (sorted by request_id, so a wave's make-up
does not depend on arrival order), grouped by sampling settings and run in a worker thread so the event
loop keeps serving the runner. Sampling defaults are the checkpoint's generation_config (the paper's
protocol: only max_new_tokens set, 512 by default). Each wave seeds torch from sha256 of the run seed and
its sorted request ids, so a rerun of the same waves reproduces the same text. A wave that raises (out of
memory, a CUDA error) is a machine fault (wtb_local/contract/faults.py): its requests and every later one raise it.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from wtb_local.contract.faults import Fault, InternalError, OutOfMemory, classify
from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.engines.base import Backend, BackendDescription, Capabilities, EngineIdentity, RerunClaim
from wtb_local.engines.completions import error_completion, prompt_too_long
from wtb_local.engines.config import TransformersConfig
from wtb_local.engines.sampling_defaults import ResolvedSampling, eos_ids, model_defaults, resolve

_DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32",
                  "float": "float32"}
# Event-loop turns to wait for more requests before a wave starts: the runner submits a step's requests
# from many coroutines, which all get to run within a few turns.
_SETTLE_TURNS = 3
# --batch-size is not hashed: a rerun with a smaller one resumes the same run directory
_ADVICE: dict[type[Fault], str] = {OutOfMemory: "rerun the same command with a smaller --batch-size to resume"}


@dataclass
class _Pending:
    request: GenerationRequest
    prompt_ids: list[int]
    sampling: ResolvedSampling
    started: float
    future: asyncio.Future[Completion] = field(repr=False)


class WaveWatch:
    """How far the running wave is, for `activity`: a stopping criterion `generate` calls after every decoding
    step (the first after the prefill), which never stops anything, so the wave's tokens are unchanged."""

    def __init__(self, rows: int, prompt_tokens: int, max_new_tokens: int, queued: int) -> None:
        self.rows = rows
        self.prompt_tokens = prompt_tokens
        self.max_new_tokens = max_new_tokens
        self.queued = queued  # requests waiting for a later wave
        self.steps = 0
        self.started = time.monotonic()

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        self.steps += 1
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    def text(self) -> str:
        waited = f"{time.monotonic() - self.started:.0f}s"
        later = f"; {self.queued} request(s) wait for a later wave" if self.queued else ""
        steps = self.steps
        if steps <= 0:
            return f"prefilling a wave of {self.rows} prompt(s), {self.prompt_tokens:,} prompt tok ({waited}){later}"
        return (f"wave of {self.rows} prompt(s) ({self.prompt_tokens:,} prompt tok prefilled): decoding step {steps} "
                f"of at most {self.max_new_tokens}, up to {steps * self.rows:,} tok generated ({waited}){later}")


def wave_seed(run_seed: int, request_ids: list[str]) -> int:
    """The torch seed of one wave: sha256 of the run seed and the wave's sorted request ids."""
    text = f"{run_seed}\n" + "\n".join(sorted(request_ids))
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:15], 16)


class TransformersBackend(Backend):
    name = "transformers"
    # a wave of left-padded `generate` is seeded per batch: batches must not depend on arrival timing
    capabilities = Capabilities(
        renders_prompts=True, needs_tokenizer="yes", samples=True, replays=False, step_synchronous=True,
        reports_token_usage=True, needs_model=True, loads_weights=True, packages=(("transformers", "torch"), "hf"))

    def __init__(self, config: TransformersConfig | None = None, **fields: Any) -> None:
        self.config = config if config is not None else TransformersConfig(**fields)
        self._model: Any = None
        self._tokenizer: Any = None
        self._defaults: dict[str, Any] = {}
        self._eos: frozenset[int] = frozenset()
        self._pad_id = 0
        self._max_model_len = 0
        self._loaded_dtype: str | None = None  # kept after close(): the manifest is written after it
        self._pending: list[_Pending] = []
        self._worker: asyncio.Task[None] | None = None
        self._broken: Fault | None = None  # the fault a wave met: every later request meets it too
        self._watch: WaveWatch | None = None  # the running wave's progress (activity)

    # --- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> None:
        await asyncio.to_thread(self._load)

    @classmethod
    def engine(cls) -> EngineIdentity:

        try:
            installed = version("transformers")
        except PackageNotFoundError:
            installed = None
        return {"name": "transformers", "version": installed, "constrained_decoding": "off"}

    @classmethod
    def from_loaded(cls, model: Any, tokenizer: Any, config: TransformersConfig) -> TransformersBackend:
        """A started backend around a model already in memory (e.g. random weights built on the GPU for a
        throughput measurement, where saving and reloading 16 GB would dominate)."""
        backend = cls(config)
        backend._adopt(model, tokenizer)
        return backend

    def _load(self) -> None:
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer

        cfg = self.config
        tokenizer = AutoTokenizer.from_pretrained(cfg.model, revision=cfg.revision,
                                                  trust_remote_code=cfg.trust_remote_code)
        dtype: Any = _DTYPE_ALIASES.get(cfg.dtype, cfg.dtype)
        if dtype != "auto":
            dtype = getattr(torch, dtype)
        # transformers 5 renamed torch_dtype to dtype.
        dtype_kw = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
        model = AutoModelForCausalLM.from_pretrained(
            cfg.model, revision=cfg.revision, trust_remote_code=cfg.trust_remote_code,
            device_map=cfg.device_map, **{dtype_kw: dtype},
        )
        self._adopt(model, tokenizer)

    def _adopt(self, model: Any, tokenizer: Any) -> None:
        model.eval()
        gen = model.generation_config.to_dict() if model.generation_config is not None else {}
        self._defaults = model_defaults(gen)
        self._eos = eos_ids(tokenizer.eos_token_id, gen.get("eos_token_id"))
        if not self._eos:
            raise ValueError(f"{self.config.model}: neither the tokenizer nor generation_config names an EOS")
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else gen.get("pad_token_id")
        self._pad_id = int(pad) if pad is not None else min(self._eos)
        limit = self.config.max_model_len or getattr(model.config, "max_position_embeddings", None)
        self._max_model_len = int(limit or tokenizer.model_max_length)
        self._loaded_dtype = str(model.dtype).removeprefix("torch.")
        self._tokenizer, self._model = tokenizer, model

    async def close(self) -> None:
        if self._worker is not None:
            await asyncio.gather(self._worker, return_exceptions=True)
        self._model = None
        self._tokenizer = None
        gc.collect()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()  # give the memory back to the next engine in this process

    # --- requests --------------------------------------------------------------------------------------

    async def generate(self, request: GenerationRequest) -> Completion:
        if self._model is None:
            raise RuntimeError("TransformersBackend.generate called before start()")
        if self._broken is not None:
            raise self._broken
        started = time.perf_counter()
        try:
            prompt_ids = (list(request.prompt_token_ids) if request.prompt_token_ids is not None
                          else list(self._tokenizer.encode(request.prompt, add_special_tokens=False)))
        except Exception as exc:  # our tokenising wrapper: an internal error, never the model's (faults.py)
            raise InternalError.of("tokenizer", exc) from exc
        n_prompt = len(prompt_ids)
        if n_prompt + 1 > self._max_model_len:
            return prompt_too_long(request, n_prompt, self._max_model_len, started)
        if n_prompt == 0:
            return error_completion(request, "empty prompt", started)
        budget = min(request.sampling.max_new_tokens, self._max_model_len - n_prompt)
        sampling = resolve(request.sampling, self._defaults, budget)
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self._pending.append(_Pending(request, prompt_ids, sampling, started, future))
        if self._worker is None:
            self._worker = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._pending:
                await self._settle()
                # Requests whose caller was cancelled (a stopped run) are not generated.
                self._pending = [p for p in self._pending if not p.future.done()]
                if not self._pending:
                    break
                wave = self._take_wave()
                try:
                    completions = await asyncio.to_thread(self._run_wave, wave)
                except Exception as exc:  # noqa: BLE001 - the machine's (out of memory, CUDA): a fault, not data
                    self._broken = classify(exc, advice=_ADVICE)
                    # Not retried at a smaller batch: left padding and the wave's seed change with its make-up,
                    # so the replies could differ from an uninterrupted run's. Every waiting request fails.
                    for pending in [*wave, *self._pending]:
                        if not pending.future.done():
                            pending.future.set_exception(self._broken)
                    self._pending = []
                    break
                for pending, completion in zip(wave, completions, strict=True):
                    if not pending.future.done():
                        pending.future.set_result(completion)
        finally:
            self._worker = None
            for pending in self._pending:  # only reached with requests left when the worker was cancelled
                if not pending.future.done():
                    pending.future.cancel()

    async def _settle(self) -> None:
        seen = -1
        while seen != len(self._pending):
            seen = len(self._pending)
            for _ in range(_SETTLE_TURNS):
                await asyncio.sleep(0)

    def _take_wave(self) -> list[_Pending]:
        ordered = sorted(self._pending, key=lambda p: p.request.request_id)
        key = ordered[0].sampling.key()
        wave = [p for p in ordered if p.sampling.key() == key][: self.config.batch_size]
        chosen = {id(p) for p in wave}
        self._pending = [p for p in self._pending if id(p) not in chosen]
        return wave

    def _run_wave(self, wave: list[_Pending]) -> list[Completion]:
        import torch
        from transformers import StoppingCriteriaList

        sampling = wave[0].sampling
        width = max(len(p.prompt_ids) for p in wave)
        rows = [[self._pad_id] * (width - len(p.prompt_ids)) + p.prompt_ids for p in wave]  # left padding
        mask = [[0] * (width - len(p.prompt_ids)) + [1] * len(p.prompt_ids) for p in wave]
        device = self._model.device
        kwargs: dict[str, Any] = {
            "max_new_tokens": sampling.max_new_tokens,
            "do_sample": sampling.do_sample,
            "repetition_penalty": sampling.repetition_penalty,
            "pad_token_id": self._pad_id,
        }
        if sampling.do_sample:
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k)
            if sampling.min_p > 0:
                kwargs["min_p"] = sampling.min_p
        watch = WaveWatch(len(wave), sum(len(p.prompt_ids) for p in wave), sampling.max_new_tokens,
                          len(self._pending))
        kwargs["stopping_criteria"] = StoppingCriteriaList([watch])
        self._watch = watch
        torch.manual_seed(wave_seed(wave[0].request.sampling.seed, [p.request.request_id for p in wave]))
        try:
            with torch.inference_mode():
                output = self._model.generate(
                    input_ids=torch.tensor(rows, dtype=torch.long, device=device),
                    attention_mask=torch.tensor(mask, dtype=torch.long, device=device),
                    **kwargs,
                )
        finally:
            self._watch = None
        new_tokens = output[:, width:].tolist()
        return [self._completion(p, tokens) for p, tokens in zip(wave, new_tokens, strict=True)]

    def activity(self) -> str | None:
        watch = self._watch
        return watch.text() if watch is not None and self._worker is not None else None

    def _completion(self, pending: _Pending, tokens: list[int]) -> Completion:
        stop_at = next((i for i, tok in enumerate(tokens) if tok in self._eos), None)
        if stop_at is None:
            kept, count, finish = tokens, len(tokens), "length"
        else:  # the EOS counts as generated (as in vLLM) but its text is dropped; pad after it is not ours
            kept, count, finish = tokens[:stop_at], stop_at + 1, "stop"
        text = self._tokenizer.decode(kept, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        return Completion(
            request_id=pending.request.request_id,
            text=text,
            prompt_tokens=len(pending.prompt_ids),
            completion_tokens=count,
            finish_reason=finish,
            latency_s=time.perf_counter() - pending.started,
        )

    @classmethod
    def rerun_claim(cls, described: Mapping[str, Any], scheduling: str | None) -> RerunClaim:
        if scheduling == "waves":
            return {"identical": True, "why": "step-synchronous waves hold the same requests in every run (sorted "
                                              "ids, --batch-size at a time), each seeded from its request ids"}
        return {"identical": False, "why": "continuous scheduling: a wave holds whatever is pending, which "
                                           "depends on timing; --scheduling waves makes reruns identical"}

    @classmethod
    def from_run(cls, run: Any, *, parser: Any, renderer: Any) -> TransformersBackend:
        return cls(TransformersConfig(**run.engine_settings(TransformersConfig), dtype=run.resolved_dtype or run.dtype))

    def describe(self) -> BackendDescription:
        info: BackendDescription = {"backend": self.name, "settings": self.config.model_dump()}
        try:
            import torch
            import transformers

            info["transformers_version"] = transformers.__version__
            info["torch_version"] = torch.__version__
            if self._model is not None:
                device = self._model.device
                info["device"] = str(device)
                if device.type == "cuda":
                    info["device_name"] = torch.cuda.get_device_name(device)
        except Exception as exc:  # noqa: BLE001 - describe() must not fail a finished run
            info["transformers_version"] = f"unavailable: {exc}"
        if self._loaded_dtype is not None:
            info["dtype"] = self._loaded_dtype  # the weights as loaded
        if self._model is not None:
            info["max_model_len"] = self._max_model_len
            info["generation_defaults"] = dict(sorted(self._defaults.items()))
        return info

