"""The transformers backend on tiny local models: waves, token counts, finish reasons, seeds, errors."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from tests.engines.helpers import chat_prompt, make_request
from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.engines import get_backend
from wtb_local.engines.config import TransformersConfig
from wtb_local.engines.hf_generate import TransformersBackend, wave_seed


def _serve(model_dir: Path, requests: list[GenerationRequest], **settings: Any) -> tuple[
        list[Completion], list[list[str]]]:
    """Start a backend, submit all requests at once, return the completions and each wave's ids."""
    backend = TransformersBackend(TransformersConfig(model=str(model_dir), **settings))
    waves: list[list[str]] = []
    run_wave = backend._run_wave

    def spy(wave: Any) -> list[Completion]:
        waves.append([p.request.request_id for p in wave])
        return run_wave(wave)

    backend._run_wave = spy  # type: ignore[method-assign]

    async def main() -> list[Completion]:
        await backend.start()
        try:
            return list(await asyncio.gather(*(backend.generate(r) for r in requests)))
        finally:
            await backend.close()

    return asyncio.run(main()), waves


def test_batch_token_counts_and_waves(tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    requests = [make_request(i, prompt=chat_prompt("hi " * (i + 1)), max_new_tokens=8) for i in range(6)]
    out, waves = _serve(tiny_model_dir, list(reversed(requests)), batch_size=4)
    # Waves are made of sorted request ids, whatever the arrival order.
    assert waves == [[r.request_id for r in requests[:4]], [r.request_id for r in requests[4:]]]
    for request, completion in zip(reversed(requests), out, strict=True):
        assert completion.request_id == request.request_id and completion.error is None
        assert completion.prompt_tokens == len(tok.encode(request.prompt, add_special_tokens=False))
        assert completion.finish_reason in ("stop", "length")
        if completion.finish_reason == "length":
            assert completion.completion_tokens == 8
        else:
            assert 1 <= completion.completion_tokens <= 8
        assert completion.latency_s > 0


def test_finish_reasons_and_special_tokens_kept(mixed_model_dir: Path) -> None:
    out, _ = _serve(mixed_model_dir, [make_request(i, max_new_tokens=16) for i in range(12)], batch_size=16)
    reasons = {c.finish_reason for c in out}
    assert reasons == {"stop", "length"}
    assert any("<tool_call>" in c.text for c in out)  # a special token survives decoding
    for c in out:
        assert "<|im_end|>" not in c.text  # EOS text is stripped (the pad token may be sampled: kept)
        if c.finish_reason == "stop":
            assert 1 <= c.completion_tokens <= 16
        else:
            assert c.completion_tokens == 16


def test_immediate_stop(stop_model_dir: Path) -> None:
    out, _ = _serve(stop_model_dir, [make_request(i) for i in range(3)])
    assert [(c.text, c.completion_tokens, c.finish_reason) for c in out] == [("", 1, "stop")] * 3


def test_seed_reproducibility(mixed_model_dir: Path) -> None:
    requests = [make_request(i, max_new_tokens=12) for i in range(5)]
    first, _ = _serve(mixed_model_dir, requests)
    again, _ = _serve(mixed_model_dir, list(reversed(requests)))
    by_id = {c.request_id: c.text for c in again}
    assert [c.text for c in first] == [by_id[r.request_id] for r in requests]
    other_run = [make_request(i, max_new_tokens=12, run_seed=1) for i in range(5)]
    changed, _ = _serve(mixed_model_dir, other_run)
    assert [c.text for c in changed] != [c.text for c in first]
    assert wave_seed(0, ["b", "a"]) == wave_seed(0, ["a", "b"]) != wave_seed(1, ["a", "b"])


def test_greedy_override_ignores_seed(mixed_model_dir: Path) -> None:
    out, waves = _serve(mixed_model_dir, [make_request(0, temperature=0.0, run_seed=0),
                                          make_request(1, temperature=0.0, run_seed=5)])
    assert out[0].text == out[1].text and out[0].text.startswith("<tool_call>")
    assert len(waves) == 1  # one sampling group: the run seed changes the wave's seed, not its make-up


def test_over_long_prompt_is_an_error_and_budget_is_capped(tiny_model_dir: Path) -> None:
    long_prompt = chat_prompt("word " * 60)
    ids = list(range(10, 38))  # 28 prompt tokens, 4 left in a 32-token window
    out, _ = _serve(tiny_model_dir, [make_request(0, prompt=long_prompt), make_request(1, prompt_token_ids=ids),
                                     make_request(2, prompt="")], max_model_len=32)
    assert out[0].finish_reason == "error" and out[0].error is not None
    assert out[0].error.startswith("prompt too long: ") and out[0].error.endswith(" tokens > max_model_len 32")
    assert out[0].prompt_tokens > 31
    assert out[1].error is None and out[1].prompt_tokens == 28 and out[1].completion_tokens <= 4
    assert out[2].finish_reason == "error" and out[2].error == "empty prompt"


def test_registry_and_describe(tiny_model_dir: Path) -> None:
    backend = get_backend("transformers", model=str(tiny_model_dir), batch_size=2)
    assert isinstance(backend, TransformersBackend)
    asyncio.run(backend.start())
    info = backend.describe()
    assert info["backend"] == "transformers" and info["settings"]["batch_size"] == 2
    assert info["device"] == "cpu" and info["max_model_len"] == 2048
    assert info["generation_defaults"]["temperature"] == 0.7 and info["transformers_version"]


def test_a_wave_out_of_memory_is_a_fault_for_it_and_every_later_request(tiny_model_dir: Path) -> None:
    """Out of memory is the machine's, never the model's (docs/reliability.md): the wave's requests, those
    still waiting and any sent later raise it; no Completion is made of it, and no wave is tried again."""
    import torch

    from wtb_local.contract.faults import OutOfMemory

    backend = TransformersBackend(TransformersConfig(model=str(tiny_model_dir), batch_size=2))
    tried: list[int] = []

    def out_of_memory(**kwargs: Any) -> Any:
        tried.append(len(kwargs["input_ids"]))
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 MiB")

    async def main() -> tuple[list[Any], Any]:
        await backend.start()
        backend._model.generate = out_of_memory
        try:
            first = await asyncio.gather(*(backend.generate(make_request(i)) for i in range(3)),
                                         return_exceptions=True)
            later = await asyncio.gather(backend.generate(make_request(9)), return_exceptions=True)
            return list(first), later[0]
        finally:
            await backend.close()

    first, later = asyncio.run(main())
    assert tried == [2]  # one wave of two; the third request waited and fails with it
    assert all(isinstance(f, OutOfMemory) for f in [*first, later]) and len({id(f) for f in first}) == 1
    fault = first[0]
    assert fault.summary() == ("machine fault (out_of_memory): OutOfMemoryError: CUDA out of memory. Tried to "
                               "allocate 20.00 MiB")
    assert fault.advice == "rerun the same command with a smaller --batch-size to resume"


def _watched(model_dir: Path, requests: list[GenerationRequest], keep_watch: bool = True) -> tuple[
        list[Completion], list[str | None]]:
    """Serve `requests` recording the backend's `activity()` before each wave and after each decoding step."""
    backend = TransformersBackend(TransformersConfig(model=str(model_dir), batch_size=3))
    seen: list[str | None] = []

    async def main() -> list[Completion]:
        await backend.start()
        generate = backend._model.generate

        def spy(**kwargs: Any) -> Any:
            (watch,) = kwargs.pop("stopping_criteria")
            seen.append(backend.activity())  # before the prefill
            if keep_watch:
                def recording(input_ids: Any, scores: Any, **more: Any) -> Any:
                    done = watch(input_ids, scores, **more)
                    seen.append(backend.activity())
                    return done

                kwargs["stopping_criteria"] = [recording]
            return generate(**kwargs)

        backend._model.generate = spy
        try:
            return list(await asyncio.gather(*(backend.generate(r) for r in requests)))
        finally:
            await backend.close()

    return asyncio.run(main()), seen


def test_a_wave_says_its_prefill_and_decoding_step_and_keeps_its_tokens(mixed_model_dir: Path) -> None:
    """The progress line's account of a transformers wave (nothing finishes for minutes on a CPU): the
    prompt tokens being prefilled, then the decoding step; watching changes no sampled token."""
    ids = [[5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15, 16], [17, 18]]
    requests = [make_request(i, max_new_tokens=6, prompt_token_ids=ids[i]) for i in range(4)]
    out, watched = _watched(mixed_model_dir, requests)
    seen = [re.sub(r"\(\d+s\)", "(Ns)", text) if text else text for text in watched]  # seconds waited
    # the first wave is requests 0-2 (12 prompt tokens), request 3 waits for the next one
    assert seen[0] == "prefilling a wave of 3 prompt(s), 12 prompt tok (Ns); 1 request(s) wait for a later wave"
    assert seen[1] == ("wave of 3 prompt(s) (12 prompt tok prefilled): decoding step 1 of at most 6, up to 3 tok "
                       "generated (Ns); 1 request(s) wait for a later wave")
    assert seen[-1] is not None and seen[-1].startswith("wave of 1 prompt(s) (2 prompt tok prefilled): decoding step")
    unwatched, _ = _watched(mixed_model_dir, requests, keep_watch=False)
    assert [c.text for c in out] == [c.text for c in unwatched]
