"""The first real-model figures (docs/real-model.md §5): Qwen2.5-Coder-0.5B-Instruct through every backend,
and one throughput comparison against one local server.

    python scripts/real_model_figures.py [--sessions all] [--out runs/real-model] [--markdown FILE] [--json FILE]
    python scripts/real_model_figures.py --tables-from runs/real-model [--replay]   (no generation)

Fetches the model (scripts/fetch_real_model.py), then runs the sample with `python -m wtb_local` (greedy,
every run at the same `--max-model-len`, the checkpoint's float32):
  vllm          the in-process engine (continuous batching, prefix cache)
  openai        `vllm serve` (same settings), wtb_local renders and parses, every episode in flight
  openai-1      the same server, one request at a time (`--max-num-seqs 1`)
  openai-8      the same server, 8 requests in flight (what the benchmark's own client keeps with
                `--num-threads 8`)
  openai-chat   the same server with `--tool-call-parser hermes --enable-auto-tool-choice`: it renders
                and parses
  transformers  transformers `generate`, step-synchronous waves
The server's prefix cache is emptied before each run against it (`VLLM_SERVER_DEV_MODE=1`, POST
/reset_prefix_cache), so the three throughput runs start alike. For each run: task and session accuracy,
parse failures, format deviations, length cuts, generated tokens per second, wall time, and the share of
steps whose completion is identical to the in-process engine's for the same conversation. The machine's
load is printed with each run (the CPU may be shared: compare runs of one invocation).

Format deviations are read from the step records' `format_deviation` field; a checkout whose parsers do
not record it shows "not recorded". `--tables-from DIR --replay` re-judges the recorded completions of
the runs wtb_local parsed with this checkout (the replay backend: no generation) and reads the field from
those replays, whose verdicts must equal the recorded ones.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's wtb_local

SERVED = "qwen2.5-coder-0.5b"
MAX_MODEL_LEN = 4096
RUN_TIMEOUT_S = 4 * 3600
# (run name, extra `run` options); the server runs name it after the backend they use
SERVER_RUNS = (("openai", ("--backend", "openai")),
               ("openai-1", ("--backend", "openai", "--max-num-seqs", "1")),
               ("openai-8", ("--backend", "openai", "--max-num-seqs", "8")),
               ("openai-chat", ("--backend", "openai-chat")))
ORDER = ("vllm", "openai", "openai-1", "openai-8", "openai-chat", "transformers")
# what each run is, in the tables
WHAT = {"vllm": "in-process vLLM engine", "openai": "vllm serve, completions, every episode in flight",
        "openai-1": "vllm serve, completions, one request at a time",
        "openai-8": "vllm serve, completions, 8 requests in flight",
        "openai-chat": "vllm serve, chat (server renders, hermes parser)",
        "transformers": "transformers generate (waves of 16)"}


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unavailable"


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_cli(model: Path, out: Path, sessions: str, extra: tuple[str, ...]) -> Path:
    selection = () if sessions == "all" else ("--sessions", sessions)
    cmd = [sys.executable, "-m", "wtb_local", "--model", str(model), "--dataset", "sample", *selection,
           "--temperature", "0", "--max-model-len", str(MAX_MODEL_LEN), "--out", str(out), "--progress", "none",
           "--overwrite", *extra]
    out.mkdir(parents=True, exist_ok=True)
    say(f"run: {' '.join(cmd[2:])}  (load {load()})")
    started = time.monotonic()
    with (out.parent / f"{out.name}.log").open("w") as log:
        done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S, check=False,
                              env={**os.environ, "PYTHONPATH": str(REPO), "VLLM_CPU_KVCACHE_SPACE":
                                   os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")})
    if done.returncode != 0:
        raise SystemExit(f"error: {out.name} failed ({done.returncode}); see {out.parent / (out.name + '.log')}")
    say(f"  done in {time.monotonic() - started:.0f} s (load {load()})")
    (out / "load.txt").write_text(load() + "\n")
    return out


def reset_prefix_cache(base_url: str) -> None:
    request = urllib.request.Request(base_url.removesuffix("/v1") + "/reset_prefix_cache", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()


def generate(model: Path, out: Path, sessions: str, skip: set[str]) -> None:
    from tests.helpers.vllm_server import vllm_server

    engine = ("--enforce-eager",)
    if "vllm" not in skip:
        run_cli(model, out / "vllm", sessions, ("--backend", "vllm", *engine))
    if {name for name, _ in SERVER_RUNS} - skip:
        # the in-process engine's settings on the CPU build, spelled as server flags
        flags = ["--dtype", "float32", "--max-model-len", str(MAX_MODEL_LEN), "--no-enable-chunked-prefill",
                 "--max-num-batched-tokens", str(MAX_MODEL_LEN), "--enforce-eager", "--gpu-memory-utilization",
                 "0.2", "--seed", "0", "--tool-call-parser", "hermes", "--enable-auto-tool-choice",
                 "--enable-prompt-tokens-details"]  # usage then counts the prompt tokens the cache served
        env = {"VLLM_SERVER_DEV_MODE": "1", "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")}
        with vllm_server(str(model), SERVED, flags, out / "server.log", env=env) as server:
            for name, extra in SERVER_RUNS:
                if name in skip:
                    continue
                reset_prefix_cache(server.base_url)
                run_cli(model, out / name, sessions,
                        (*extra, "--base-url", server.base_url, "--served-model-name", SERVED))
    if "transformers" not in skip:
        run_cli(model, out / "transformers", sessions, ("--backend", "transformers"))


# --- figures from the run directories ---------------------------------------------------------------------


def _result_rows(run_dir: Path) -> list[dict[str, Any]]:
    (folder,) = (run_dir / "result").iterdir()
    text = (folder / "Wild-Tool-Bench_result.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def steps_of(rows: list[dict[str, Any]]) -> dict[tuple[str, int, int], dict[str, Any]]:
    found = {}
    for row in rows:
        for task in row["result"]:
            log = task["inference_log"]
            for key, step in log.items():
                if key.startswith("step_"):
                    found[(row["id"], log["task_idx"], int(key.removeprefix("step_")))] = step
    return found


def records_deviations() -> bool:
    """Whether this checkout's parsers record format deviations on the steps (docs/parser-policies.md)."""
    from wtb_local.contract.schema import ParseResult

    return "format_deviation" in ParseResult.model_fields


def deviation_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Steps with tool calls in a foreign wrapper, per kind (`fenced_json`, `bare_json`, `format:<parser>`),
    from the step records' `format_deviation` field."""
    counts: dict[str, int] = {}
    for step in steps_of(rows).values():
        record = step["inference_output"].get("format_deviation")
        if isinstance(record, dict) and isinstance(record.get("kind"), str):
            counts[record["kind"]] = counts.get(record["kind"], 0) + 1
    return dict(sorted(counts.items()))


def figures_of(run_dir: Path, reference: dict[tuple[str, int, int], dict[str, Any]] | None,
               deviations_from: Path | None) -> dict[str, Any]:
    from wtb_local.analysis.reports.health import run_health

    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    rows = _result_rows(run_dir)
    summary = manifest["summary"]
    throughput = summary.get("throughput") or {}
    health = run_health(rows, None, manifest)
    parsed_by_us = manifest.get("parser") is not None
    deviations: Any = "the server parses"
    if parsed_by_us:
        source = _result_rows(deviations_from) if deviations_from is not None else rows
        deviations = deviation_counts(source) if records_deviations() else "not recorded"
    steps = steps_of(rows)
    identical = None
    if reference is not None:
        same_input = [k for k, s in steps.items() if k in reference
                      and reference[k]["inference_input"] == s["inference_input"]]
        identical = {"steps": len(same_input), "identical": sum(
            1 for k in same_input if reference[k]["inference_output"].get("raw") == steps[k]["inference_output"].get("raw")
            and reference[k]["inference_output"].get("tool_calls") == steps[k]["inference_output"].get("tool_calls"))}
    return {
        "backend": manifest["backend"]["backend"], "dtype": manifest["settings"].get("resolved_dtype"),
        "max_num_seqs": manifest["settings"].get("max_num_seqs"),
        "tasks": summary["task_accuracy"]["total_count"], "steps": len(steps),
        "task_accuracy": summary["task_accuracy"]["accuracy"], "session_accuracy": summary["session_accuracy"]["accuracy"],
        "parse_failures": sum(1 for s in steps.values() if s["inference_output"].get("parse_errors")),
        "parse_failure_pct": health["parse_failure_pct"], "format_deviations": deviations,
        "length_cuts": health["length_steps"], "generated_tokens": throughput.get("generated_tokens"),
        "generated_tokens_per_s": throughput.get("generated_tokens_per_s"),
        "prefix_cache_hit_rate": throughput.get("prefix_cache_hit_rate"), "wall_s": health["wall_s"],
        "loop_wall_s": throughput.get("wall_s"), "identical_to_vllm": identical,
        "load": (run_dir / "load.txt").read_text().strip() if (run_dir / "load.txt").exists() else None,
    }


def replay(run_dir: Path, out: Path) -> Path:
    """The run's recorded completions parsed and judged again by this checkout (no generation)."""
    cmd = [sys.executable, "-m", "wtb_local", "--backend", "replay", "--replay", str(run_dir), "--out", str(out),
           "--progress", "none", "--overwrite"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    if done.returncode != 0:
        raise SystemExit(f"error: replay of {run_dir} failed: {done.stderr.strip().splitlines()[-1:]}")
    verdicts = [[t["action_name_label"] for t in row["result"]] for row in _result_rows(run_dir)]
    if verdicts != [[t["action_name_label"] for t in row["result"]] for row in _result_rows(out)]:
        raise SystemExit(f"error: the replay of {run_dir} judged otherwise than the run")
    return out


def tables(out: Path, do_replay: bool) -> dict[str, Any]:
    present = [name for name in ORDER if (out / name / "manifest.json").exists()]
    reference = steps_of(_result_rows(out / "vllm")) if "vllm" in present else None
    figures = {}
    for name in present:
        replayed = None
        if do_replay and json.loads((out / name / "manifest.json").read_text()).get("parser") is not None:
            replayed = replay(out / name, out / "replay" / name)
        figures[name] = figures_of(out / name, reference if name != "vllm" else None, replayed)
    return {"figures": figures, "deviations_recorded": records_deviations(), "machine": machine()}


def machine() -> dict[str, Any]:
    from wtb_local.run.setup.dtype import cpu_flags

    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    flags = cpu_flags() or frozenset()
    return {"cpu": model, "cpus": os.cpu_count(), "bf16": sorted(flags & {"avx512_bf16", "amx_bf16"}),
            "avx512f": "avx512f" in flags}


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}"


def markdown(data: dict[str, Any], command: str) -> str:
    figures = data["figures"]
    machine_line = (f"Made by `{command}` on {data['machine']['cpus']} CPUs ({data['machine']['cpu']}; bf16 "
                    f"instructions: {', '.join(data['machine']['bf16']) or 'none'}).")
    header = ("| run | what | tasks | task acc % | session acc % | parse failures | format deviations | length cuts "
              "| generated tok/s | wall s | identical to vllm | load |")
    lines = [machine_line, "", header, "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, f in figures.items():
        deviations = f["format_deviations"]
        if isinstance(deviations, dict):
            deviations = ", ".join(f"{k} {v}" for k, v in deviations.items()) or "0"
        same = f["identical_to_vllm"]
        same_text = "—" if same is None else f"{same['identical']}/{same['steps']}"
        tok_s = "n/a" if f["generated_tokens_per_s"] is None else f"{f['generated_tokens_per_s']:.1f}"
        lines.append(f"| {name} | {WHAT.get(name, name)} | {f['tasks']} | {_pct(f['task_accuracy'])} | "
                     f"{_pct(f['session_accuracy'])} | {f['parse_failures']} of {f['steps']} | {deviations} | "
                     f"{f['length_cuts']} | {tok_s} | {f['wall_s']:.0f} | {same_text} | {f['load']} |")
    speed = [n for n in ("openai", "openai-1", "openai-8") if n in figures]
    if speed:
        lines += ["", "| against one vllm serve | wall s | generated tok/s | tasks/s | prefix cache % | load |",
                  "|---|---|---|---|---|---|"]
        for name in speed:
            f = figures[name]
            tasks_s = f["tasks"] / f["loop_wall_s"] if f["loop_wall_s"] else None
            lines.append(f"| {WHAT[name].removeprefix('vllm serve, completions, ')} | {f['loop_wall_s']:.0f} | "
                         f"{f['generated_tokens_per_s']:.1f} | {tasks_s:.3f} | {_pct(f['prefix_cache_hit_rate'])} | "
                         f"{f['load']} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="all", help="sample sessions (ids or numbers, comma-separated)")
    parser.add_argument("--out", default="runs/real-model", help="where the run directories go")
    parser.add_argument("--skip", default="", help="runs to leave out, comma-separated (e.g. transformers)")
    parser.add_argument("--tables-from", help="a finished --out: only the tables, no generation")
    parser.add_argument("--replay", action="store_true", help="with --tables-from: re-judge with this checkout")
    parser.add_argument("--markdown", help="write the tables here")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    command = "python scripts/real_model_figures.py " + " ".join(sys.argv[1:])
    if args.tables_from:
        out = Path(args.tables_from)
    else:
        from tests.helpers.real_model import RealModelError, default_dir, fetch_real_model

        try:
            model = fetch_real_model(default_dir(), say=say)
        except RealModelError as exc:
            raise SystemExit(f"error: {exc}") from None
        out = Path(args.out)
        generate(model, out, args.sessions, {s.strip() for s in args.skip.split(",") if s.strip()})
    data = tables(out, args.replay)
    text = markdown(data, command)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
