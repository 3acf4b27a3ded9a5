"""One model's factors measured and one gap decomposed: the runs `explain --plan MODEL_DIR` lists (three
seeds, the family's alternative parsers, the template override where one serves the model, the other
engine, `--protocol paper`), run one after the other, then `explain` over all of them
(docs/explain.md, "On a real model").

    python scripts/explain_real_model.py MODEL_DIR OUT_DIR [--engine vllm] [--cpu] [--dataset sample]
        [--sessions 0,1] [--limit N] [--max-new-tokens N] [--temperature T] [--run-option '...']

Writes OUT_DIR/plan.sh (the commands), OUT_DIR/runs/<run>/ (each resumes when the script runs again),
OUT_DIR/logs/<run>.log (each command's output), OUT_DIR/timings.json (each command's wall time) and
OUT_DIR/explain/ (explain.md, explain.json, explain.html, the CSVs and plots/waterfall.png). A run that
fails stops the script with one line naming its log: a failed run is a fault to fix and rerun, never a
result. `--cpu` adds what the CPU build of vLLM needs (float32, 20% of the RAM, no graphs, a 1 GiB KV
cache).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CPU_OPTIONS = "--dtype float32 --gpu-memory-utilization 0.2 --enforce-eager"


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", help="the model: a local directory (or a hub id in the local cache)")
    parser.add_argument("out_dir", help="where the runs, logs and explanation go")
    parser.add_argument("--engine", default=None, help="the baseline's engine (default: explain --plan's)")
    parser.add_argument("--cpu", action="store_true", help="the CPU build of vLLM's settings for every run")
    parser.add_argument("--dataset", default=None, help="sample, release or a file (default: the run's)")
    parser.add_argument("--sessions", default=None, help="only these sessions (ids or numbers, comma-separated)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sessions")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="the generation budget of every run")
    parser.add_argument("--temperature", type=float, default=None, help="for a model that decodes greedily")
    parser.add_argument("--run-option", action="append", default=[], help="more `run` options for every run")
    parser.add_argument("--run-timeout", type=float, default=6 * 3600.0, help="seconds one command may take")
    return parser.parse_args(argv)


def _run_options(args: argparse.Namespace) -> list[str]:
    options = list(args.run_option)
    for flag, value in (("--dataset", args.dataset), ("--sessions", args.sessions), ("--limit", args.limit),
                        ("--max-new-tokens", args.max_new_tokens), ("--temperature", args.temperature)):
        if value is not None:
            options.append(f"{flag} {value}")
    if args.cpu:
        options.append(CPU_OPTIONS)
    return options


def _command(arguments: tuple[str, ...], log: Path, env: dict[str, str], timeout: float) -> float:
    """One `python -m wtb_local` command, its output into `log`; its wall time. Exits on a failure."""
    started = time.monotonic()
    with log.open("w", encoding="utf-8") as handle:
        try:
            done = subprocess.run([sys.executable, "-m", "wtb_local", *arguments], stdout=handle,
                                  stderr=subprocess.STDOUT, env=env, cwd=ROOT, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            sys.exit(f"{log.stem}: still running after {timeout:.0f} s: stopped; see {log}")
    if done.returncode != 0:
        sys.exit(f"{log.stem}: failed (exit {done.returncode}); see {log}")
    return round(time.monotonic() - started, 1)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from wtb_local.explain.plan import PlanError, make_plan, plan_script

    args = _arguments(argv)
    out = Path(args.out_dir).resolve()
    (out / "logs").mkdir(parents=True, exist_ok=True)
    try:
        plan = make_plan(args.model_dir, runs_dir=str(out / "runs"), engine=args.engine,
                         run_options=_run_options(args), explain_out=str(out / "explain"))
    except PlanError as exc:
        sys.exit(f"error: {exc}")
    (out / "plan.sh").write_text(plan_script(plan), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "WTB_PROGRESS": "none"}
    if args.cpu:
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    timings: dict[str, float] = {}
    for note in plan.notes:
        print(f"note: {note}")
    for run in plan.runs:
        print(f"{run.name}: {run.factor} ...", flush=True)
        timings[run.name] = _command(run.args, out / "logs" / f"{run.name}.log", env, args.run_timeout)
    timings["explain"] = _command(plan.explain_args, out / "logs" / "explain.log", env, args.run_timeout)
    (out / "timings.json").write_text(json.dumps(timings, indent=2) + "\n", encoding="utf-8")
    print(f"explanation: {out / 'explain' / 'explain.md'} (the terminal text: {out / 'logs' / 'explain.log'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
