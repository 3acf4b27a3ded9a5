"""The GPU check, in one command: the release-sized workload through the in-process vLLM runner, one
request at a time (a bounded subset, extrapolated), and the vLLM OpenAI server driven with request threads.

No model hub access is needed: the model is Qwen3-8B's published shape (config.json written here) with
dummy weights (vLLM's `load_format="dummy"`, random values, nothing read from disk), and its tokenizer is
a BPE trained here on the dataset's own text (token counts close to a real tokenizer's). Every step
generates exactly the length of its gold reply in the native (Hermes) format, `--lengths thinking` adds a
seeded reasoning length (tests/helpers/workload.py), and is then answered with the gold reply, so every
task runs the benchmark's real number of steps. Decoding is greedy.

Workload: the release file when it is in the wtb_local cache (`python -m wtb_local data fetch`), else
synthetic sessions of the release's shape: the embedded 8-session sample repeated to 256 sessions
(1,024 tasks), each copy with its own system prompt (no prefix shared across copies).

    python scripts/gpu_throughput.py            # CUDA: Qwen3-8B shape, bf16, 256 sessions
    python scripts/gpu_throughput.py --tiny     # CPU: a tiny shape, 4 sessions, the same code path

Phases, in order (the JSON is rewritten after each, so a run cut short keeps what it measured):
  continuous     the wtb_local runner, every task in flight, full workload
  one-at-a-time  one request in flight, the first `--one-at-a-time-sessions` sessions; tasks/s is that
                 subset's rate, `extrapolated_wall_s` the full workload at that rate (labelled as such)
  server         `vllm.entrypoints.openai.api_server`, same engine flags, request threads, full workload
Writes gpu_throughput.json to --out-json, and to $OUT when set: tasks/s, wall times, prefix-cache hit
rates, engine-busy shares, runner ms per step, engine start times, peak GPU memory (nvidia-smi), and the
vLLM / torch / CUDA versions. Goals on one H200: the full workload in under 120 s after load, >= 50x one
request at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

# Qwen3-8B's published shape (config.json of Qwen/Qwen3-8B).
QWEN3_8B: dict[str, Any] = {
    "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936, "max_position_embeddings": 40960,
    "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
}
# A tiny shape for the CPU smoke run; like the real one, its vocabulary is larger than the tokenizer's.
# (head_dim 64: vLLM's CPU attention rejects small head dims.)
TINY: dict[str, Any] = {
    "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2,
    "head_dim": 64, "intermediate_size": 256, "vocab_size": 16384, "max_position_embeddings": 16384,
    "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
}
RELEASE_SESSIONS = 256
TOKENIZER_VOCAB = 8192


def engine_settings(tiny: bool) -> dict[str, Any]:
    """The one engine configuration of every phase (vLLM engine-argument names)."""
    settings: dict[str, Any] = {
        "max_model_len": 16384,
        "load_format": "dummy",
        "enable_prefix_caching": True,
        "seed": 0,
        # every task of the release in flight at once: vLLM's offline default on H100/H200-class GPUs,
        # which the runner's engine takes when unset (batch_usage_context in vllm_engine.py); set here
        # so the server gets the same
        "max_num_seqs": 1024,
    }
    if tiny:  # the CPU build: as the runner sets it up there (no chunked prefill, eager)
        settings.update(max_model_len=8192, gpu_memory_utilization=0.2, enforce_eager=True,
                        enable_chunked_prefill=False, max_num_batched_tokens=8192, max_num_seqs=256)
    else:
        # vLLM's offline batch-token default on H100/H200 (the server's own default is 8,192): one
        # configuration for both
        settings.update(dtype="bfloat16", gpu_memory_utilization=0.9, max_num_batched_tokens=16384)
    return settings


# --- workload and model ------------------------------------------------------------------------------


def workload(dataset: Path | None, sessions: int, work: Path) -> tuple[Path, str]:
    """(dataset file, what it is). The release when given or cached, else the sample repeated."""
    from tests.helpers.workload import replicated_dataset
    from wtb_local.benchmark.dataset.fetch import release_path
    from wtb_local.contract.resources import sample_dataset_path

    source = dataset if dataset is not None else release_path()
    if source.is_file():
        return source, f"{source} (first {sessions} sessions)"
    sample = sample_dataset_path()
    copies = -(-sessions // 8)
    path = replicated_dataset(sample, copies, work / "synthetic.jsonl")
    return path, f"synthetic: the embedded sample x {copies} (release file absent)"


def build_model(work: Path, dataset: Path, shape: dict[str, Any], dtype: str) -> Path:
    """A model directory: a BPE tokenizer trained on the dataset text, a Qwen3 config of `shape`, no
    weights (vLLM's dummy loader makes them)."""
    from transformers import Qwen3Config

    from tests.helpers import build_tiny_model

    template = json.loads((ROOT / "tests" / "fixtures" / "runner" / "chat_templates.json")
                          .read_text(encoding="utf-8"))["Qwen/Qwen2.5-7B-Instruct"]["chat_template"]
    corpus = dataset.read_text(encoding="utf-8").splitlines()[:64]
    model_dir = build_tiny_model(work / "model", template, special_tokens=["<tool_call>", "</tool_call>"],
                                 arch="qwen3", vocab_size=TOKENIZER_VOCAB,
                                 max_position_embeddings=shape["max_position_embeddings"], corpus=corpus)
    tiny_config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    for weights in model_dir.glob("*.safetensors"):
        weights.unlink()  # the dummy loader needs none: the shape is what counts
    ids = {k: tiny_config.get(k) for k in ("bos_token_id", "eos_token_id", "pad_token_id")}
    # `architectures` tells vLLM which model class (a bare config has none: "does not support generation")
    Qwen3Config(**shape, **ids, dtype=dtype, architectures=["Qwen3ForCausalLM"]).save_pretrained(model_dir)
    return model_dir


# --- measurement ---------------------------------------------------------------------------------------


class GpuMemory:
    """Peak GPU memory in use (MiB, all processes: the engine runs in its own), sampled from nvidia-smi."""

    def __init__(self) -> None:
        self.peak_mib: int | None = None
        self.total_mib: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,memory.total",
                                  "--format=csv,noheader,nounits"], capture_output=True, text=True,
                                 timeout=10, check=True).stdout.splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            return
        used, total = (int(x.strip()) for x in out.split(","))
        self.peak_mib = max(self.peak_mib or 0, used)
        self.total_mib = total

    def start(self) -> None:
        if shutil.which("nvidia-smi") is None:
            return

        def loop() -> None:
            while not self._stop.wait(1.0):
                self.sample()

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
        return {"peak_used_mib": self.peak_mib, "total_mib": self.total_mib,
                "source": "nvidia-smi" if self._thread is not None else "unavailable (no nvidia-smi)"}


def versions() -> dict[str, Any]:
    import torch
    import vllm

    info: dict[str, Any] = {"vllm": vllm.__version__, "torch": torch.__version__,
                            "cuda": torch.version.cuda, "python": platform.python_version()}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def _settings(model_dir: Path, dataset: Path, out: Path, backend: str, limit: int,
              base_url: str | None = None) -> Any:
    from wtb_local.run import RunOptions

    return RunOptions(backend=backend, model=str(model_dir), model_name="qwen3-8b-shape", dataset=str(dataset),
                       out=str(out), progress="plain", limit=limit, base_url=base_url, overwrite=True,
                       max_new_tokens=8192, temperature=0.0, seed=0)


RUNNER_BOUND_SHARE = 0.8  # the event loop busy with the runner's own work for this share of the wall time


def pace(block: dict[str, Any]) -> dict[str, Any]:
    """Who set the pace (docs/runner-speed.md §4): `runner_headroom` is the step rate the runner alone could
    have fed over the rate the run made; a runner busy for most of the wall time set the pace itself."""
    ceiling, made, share = (block.get("runner_ceiling_steps_per_s"), block.get("steps_per_s"),
                            block.get("runner_busy_share"))
    if not ceiling or not made or share is None:
        return {"runner_headroom": None, "paced_by": None}
    return {"runner_headroom": round(ceiling / made, 2),
            "paced_by": "runner" if share >= RUNNER_BOUND_SHARE else "engine"}


async def _run(label: str, settings: Any, backend: Any, renderer: Any, total_tasks: int) -> dict[str, Any]:
    from wtb_local.run import run_job_async

    outcome = await run_job_async(settings, backend=backend, renderer=renderer)
    block = outcome.manifest["summary"]["throughput"]
    figures = {"mode": label, "sessions": len(outcome.result_rows), **block, **pace(block)}
    failed = failed_steps(outcome.result_rows)
    if failed:
        # a throughput figure of failed requests means nothing: stop with the reason
        reason, count = failed.most_common(1)[0]
        raise SystemExit(f"gpu_throughput: {sum(failed.values())} request(s) failed in {label} "
                         f"(most often, {count}x: {reason})")
    if block["tasks"] < total_tasks and block["tasks_per_s"]:
        figures["extrapolated_wall_s"] = round(total_tasks / block["tasks_per_s"], 1)
        figures["note"] = (f"measured on {block['tasks']} of {total_tasks} tasks; extrapolated_wall_s is the "
                           "full workload at this rate")
    return figures


async def in_process(model_dir: Path, dataset: Path, work: Path, args: Any, engine: dict[str, Any],
                     report: dict[str, Any], save: Any) -> None:
    from tests.helpers.workload import ExactLengthVLLM, GoldSteered, OneAtATime, StepLengths
    from wtb_local.engines.config import VLLMConfig
    from wtb_local.engines.oracle import OracleBackend
    from wtb_local.run.setup.tokenizer import load_renderer

    backend = ExactLengthVLLM(VLLMConfig(model=str(model_dir), **engine))
    started = time.perf_counter()
    await backend.start()
    report["engine_start_s"] = round(time.perf_counter() - started, 1)
    try:
        renderer = load_renderer(_settings(model_dir, dataset, work, "vllm", args.sessions).model)
        steered = GoldSteered(backend, OracleBackend(parser="hermes", renderer=renderer),
                              StepLengths(args.lengths, renderer.encode))
        await _run("warm-up", _settings(model_dir, dataset, work / "warm", "vllm", 1), steered, renderer, 0)
        total = report["workload"]["tasks"]
        for label, wrapped, limit in (("continuous", steered, args.sessions),
                                      ("one-at-a-time", OneAtATime(steered), args.one_at_a_time_sessions)):
            await backend._engine.reset_prefix_cache()  # no phase reuses another's cached prompts
            figures = await _run(label, _settings(model_dir, dataset, work / label, "vllm", limit), wrapped,
                                 renderer, total)
            report["modes"].append(figures)
            save()
        report["short_completions"] = steered.short
    finally:
        await backend.close()


def server_flags(engine: dict[str, Any]) -> list[str]:
    flags: list[str] = []
    for key, value in engine.items():
        name = key.replace("_", "-")
        flags += ([f"--{name}"] if value else [f"--no-{name}"]) if isinstance(value, bool) else [f"--{name}", str(value)]
    return flags


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_server(proc: subprocess.Popen, base_url: str, log_path: Path, limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM server exited ({proc.returncode}); see {log_path}")
        try:
            with urllib.request.urlopen(base_url + "/models", timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"vLLM server did not come up in {limit_s:.0f} s; see {log_path}") from None
            time.sleep(1)


async def _server_phase(model_dir: Path, dataset: Path, work: Path, args: Any, base_url: str,
                        engine: dict[str, Any], total: int) -> dict[str, Any]:
    from tests.helpers.workload import ExactLengthOpenAI, GoldSteered, StepLengths
    from wtb_local.engines.config import OpenAIConfig
    from wtb_local.engines.oracle import OracleBackend
    from wtb_local.run.setup.tokenizer import load_renderer

    settings = _settings(model_dir, dataset, work / "server", "openai", args.sessions, base_url)
    renderer = load_renderer(settings.model)
    client = ExactLengthOpenAI(OpenAIConfig(base_url=base_url, model=str(model_dir),
                                            max_concurrency=engine["max_num_seqs"]))
    await client.start()
    try:
        steered = GoldSteered(client, OracleBackend(parser="hermes", renderer=renderer),
                              StepLengths(args.lengths, renderer.encode))
        await _run("server warm-up", settings.model_copy(update={"limit": 1, "out": str(work / "sw")}),
                   steered, renderer, 0)
        return await _run("server", settings, steered, renderer, total)
    finally:
        await client.close()


def server(model_dir: Path, dataset: Path, work: Path, args: Any, engine: dict[str, Any],
           report: dict[str, Any]) -> None:
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
           "--host", "127.0.0.1", "--port", str(port), "--enable-prompt-tokens-details",
           *server_flags(engine)]
    log_path = work / "server.log"
    started = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
        try:
            _wait_for_server(proc, base_url, log_path, 480)
            report["server_start_s"] = round(time.perf_counter() - started, 1)
            figures = asyncio.run(_server_phase(model_dir, dataset, work, args, base_url, engine,
                                                report["workload"]["tasks"]))
            report["modes"].append(figures)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def goals(report: dict[str, Any]) -> dict[str, Any]:
    by_mode = {m["mode"]: m for m in report["modes"]}
    cont, one = by_mode.get("continuous"), by_mode.get("one-at-a-time")
    out: dict[str, Any] = {}
    if cont:
        out["continuous_wall_s"] = cont["wall_s"]
        out["under_120_s"] = cont["wall_s"] < 120
    if cont and one and one["tasks_per_s"]:
        out["x_one_at_a_time"] = round(cont["tasks_per_s"] / one["tasks_per_s"], 1)
        out["at_least_50x"] = out["x_one_at_a_time"] >= 50
    if cont and by_mode.get("server") and by_mode["server"]["tasks_per_s"]:
        out["x_server"] = round(cont["tasks_per_s"] / by_mode["server"]["tasks_per_s"], 2)
    return out


def failed_steps(rows: list[dict[str, Any]]) -> Counter[str]:
    """Why steps failed (finish_reason "error"), by reason."""
    reasons: Counter[str] = Counter()
    for row in rows:
        for task in row["result"]:
            for key, step in task["inference_log"].items():
                output = step.get("inference_output", {}) if key.startswith("step_") else {}
                if output.get("finish_reason") == "error":
                    reasons[str(output.get("error_reason"))[:300]] += 1
    return reasons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="a tiny shape on CPU (the same code path)")
    parser.add_argument("--dataset", type=Path, default=None, help="default: the cached release, else synthetic")
    parser.add_argument("--sessions", type=int, default=None, help="default 256 (GPU) / 4 (--tiny)")
    parser.add_argument("--one-at-a-time-sessions", type=int, default=None, help="default 2 (GPU) / 1 (--tiny)")
    parser.add_argument("--lengths", choices=("gold", "thinking"), default="gold")
    parser.add_argument("--no-server", action="store_true", help="skip the server phase")
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args()
    args.sessions = args.sessions or (4 if args.tiny else RELEASE_SESSIONS)
    args.one_at_a_time_sessions = min(args.one_at_a_time_sessions or (1 if args.tiny else 2), args.sessions)
    if not args.tiny:
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("gpu_throughput: no CUDA device; run with --tiny for the CPU smoke run")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    if args.tiny:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")

    targets = [args.out_json] if args.out_json else []
    if os.environ.get("OUT"):
        targets.append(Path(os.environ["OUT"]) / "gpu_throughput.json")
    begun = time.perf_counter()
    engine = engine_settings(args.tiny)
    memory = GpuMemory()
    memory.start()
    with tempfile.TemporaryDirectory(prefix="wtb_gpu_") as tmp:
        work = Path(tmp)
        dataset, what = workload(args.dataset, args.sessions, work)
        from wtb_local.benchmark.dataset.loader import read_dataset

        rows, problems = read_dataset(dataset)
        if problems:
            raise SystemExit(f"{dataset}: {problems[0]}")
        chosen = rows[: args.sessions]
        report: dict[str, Any] = {
            "script": "gpu_throughput",
            "shape": "tiny (CPU smoke run)" if args.tiny else "Qwen3-8B (dummy weights, bf16)",
            "engine": engine,
            "workload": {"dataset": what, "sessions": len(chosen),
                         "tasks": sum(len(s.english_tasks) for s in chosen), "lengths": args.lengths,
                         "one_at_a_time_sessions": args.one_at_a_time_sessions},
            "versions": versions(),
            "host": platform.node(),
            "modes": [],
        }

        def save() -> None:
            report["total_s"] = round(time.perf_counter() - begun, 1)
            report["goals"] = goals(report)
            text = json.dumps(report, indent=1)
            for target in targets:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text + "\n", encoding="utf-8")

        model_dir = build_model(work, dataset, TINY if args.tiny else QWEN3_8B,
                                "float32" if args.tiny else "bfloat16")
        report["setup_s"] = round(time.perf_counter() - begun, 1)
        asyncio.run(in_process(model_dir, dataset, work, args, engine, report, save))
        if not args.no_server:
            server(model_dir, dataset, work, args, engine, report)
        report["gpu_memory"] = memory.stop()
        save()
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
