"""The runner's own ceiling: steps per second with an engine that answers instantly (docs/runner-speed.md).

Every step goes through the real prompt renderer (a real chat template, Qwen3's, from
tests/fixtures/rendering/chat_templates.json), a real tokenizer (a byte-level BPE of `--vocab-size` tokens
trained on the sample's text: the tokenizer class and code path of a downloaded Qwen3, built offline), the
model family's tool-call parser, the evaluator and the durable result store; the engine is replaced by
the instant backend (wtb_local/engines/instant.py), which answers each request with its gold completion
in the model's native format from a table filled by an unmeasured priming run of this checkout (kept in
a file for the others). The workload is the sample
repeated to `--copies` x 8 sessions (32 copies: the release's 256 sessions, 1,024 tasks).

Two code trees run the same harness, alternately, `--rounds` times each, in fresh processes:
  before  `--baseline REV` (git archive of that revision's `wtb_local/`)
  after   this checkout
and the script checks that both sent byte-identical prompts and token ids for every request and wrote the
same result rows (the per-step `runner_ms` timing aside). Figures are steps/s (steps over the wall time of
the session loop, session setup and final sort included) and ms per step by stage from the run's
throughput meter; the machine's load (`/proc/loadavg`) is printed with each run: compare the two trees
within one run of the script, not across runs.

    .venv/bin/python scripts/bench_runner.py [--copies 32] [--rounds 3] [--baseline c40c0a2] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TEMPLATE_MODEL = "Qwen/Qwen3-0.6B"
BASELINE = "c40c0a2"  # the runner before docs/runner-speed.md's changes


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unavailable"


# --- the harness (runs inside a worker process, against whichever `wtb_local` is on sys.path) -----------

def _instant_backend_class() -> Any:
    """The instant backend (this checkout's), which writes the gold replies: the priming run only."""
    from wtb_local.engines.instant import InstantBackend

    return InstantBackend


class _FrozenReplies:
    """The frozen instant backend (`InstantBackend.frozen`) restated here on the schema alone, so a baseline
    tree older than the instant backend (or than its base classes) answers from the same table."""

    name = "instant"
    produces_text, needs_prompt, needs_gold = True, True, False

    def __init__(self, replies: dict[str, tuple[str, int]]) -> None:
        self.replies = replies

    async def generate(self, request: Any) -> Any:
        from wtb_local.contract.schema import Completion

        await asyncio.sleep(0)  # as an engine answers: after the loop's other ready work
        prompt_tokens = len(request.prompt_token_ids or [])
        known = self.replies.get(request.request_id)
        if known is None:
            return Completion(request_id=request.request_id, prompt_tokens=prompt_tokens, finish_reason="error",
                              error=f"instant backend: no reply recorded for {request.request_id}")
        text, tokens = known
        return Completion(request_id=request.request_id, text=text, prompt_tokens=prompt_tokens,
                          completion_tokens=tokens, finish_reason="stop", latency_s=0.0)

    def prefilled_reasoning(self, request: Any) -> bool | None:
        return None


async def _one_run(sessions: list[Any], backend: Any, renderer: Any, parser: Any, out: Path,
                   workers: int = 0) -> dict[str, Any]:
    from wtb_local.benchmark.evaluator.episode import session_episodes, session_result
    from wtb_local.contract.schema import SamplingConfig
    from wtb_local.run.loop.loop import SessionRunner
    from wtb_local.run.loop.progress import ProgressStats, make_progress
    from wtb_local.run.loop.steps import StepDriver
    from wtb_local.run.record.store import ResultStore

    store = ResultStore(out)
    store.open(fresh=True)
    pool = None
    if workers:  # started and ready before the clock starts, as a run starts them beside the engine
        from wtb_local.formats.rendering.pool import RenderPool

        pool = RenderPool(renderer, workers)
        pool.start()
        await pool.ready()
    driver = StepDriver(backend, sampling=SamplingConfig(temperature=0.0, seed=0), parser=parser,
                        renderer=renderer, **({"pool": pool} if pool is not None else {}))
    tasks = sum(len(s.english_tasks) for s in sessions)
    stats = ProgressStats(len(sessions), tasks, 0)
    load_before = load()
    # as run_job builds it: finished episodes' entries are serialised without a copy where the tree can
    session_row = session_result
    if "fresh" in inspect.signature(session_result).parameters:
        session_row = functools.partial(session_result, fresh=False)
    with make_progress("none", stats, sys.stderr) as progress:
        runner = SessionRunner(driver, store, model_name="bench", progress=progress,
                               episodes_for=session_episodes, session_row=session_row)
        workers_cpu = _children_cpu(pool.pids) if pool is not None else 0.0
        started, cpu_started = time.perf_counter(), time.process_time()
        driver.meter.started = driver.meter.now()
        await runner.run(sessions, "continuous")
        store.finalize()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    if pool is not None:
        cpu += _children_cpu(pool.pids) - workers_cpu  # the workers' CPU time over the same span
        pool.close()
    if hasattr(driver.meter, "writer_busy_s"):
        driver.meter.writer_busy_s = store.write_s
    block = driver.meter.summary(tasks)
    return {"steps": block["steps"], "wall_s": round(wall, 3), "steps_per_s": round(block["steps"] / wall, 1),
            "ms_per_step": round(1000 * wall / block["steps"], 4), "throughput": block,
            # CPU seconds of the process (all threads): less sensitive to a busy machine than wall time
            "cpu_s": round(cpu, 3), "steps_per_cpu_s": round(block["steps"] / cpu, 1),
            "load_before": load_before, "load_after": load()}


def _children_cpu(pids: list[int]) -> float:
    """User + system CPU seconds of running processes so far (/proc/PID/stat fields 14 and 15)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


class _Recording:
    """Wraps the backend: keeps each request's prompt and token ids (references only, hashed afterwards)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name
        self.produces_text, self.needs_prompt, self.needs_gold = True, True, inner.needs_gold
        self.seen: dict[str, tuple[str, list[int]]] = {}

    async def generate(self, request: Any) -> Any:
        self.seen[request.request_id] = (request.prompt, request.prompt_token_ids)
        return await self.inner.generate(request)

    def digest(self) -> str:
        h = hashlib.sha256()
        for rid in sorted(self.seen):
            prompt, ids = self.seen[rid]
            h.update(f"{rid}\0{prompt}\0{','.join(map(str, ids or []))}\n".encode())
        return h.hexdigest()


def _result_digest(path: Path) -> str:
    """sha256 of the result file with the per-step timing (`runner_ms`) removed."""
    h = hashlib.sha256()
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for task in row["result"]:
            for key, step in task["inference_log"].items():
                if key.startswith("step_"):
                    step["inference_output"].pop("runner_ms", None)
        h.update(json.dumps(row, ensure_ascii=False).encode() + b"\n")
    return h.hexdigest()


def worker(args: Any) -> None:
    from transformers import AutoTokenizer

    from wtb_local.benchmark.dataset import read_dataset
    from wtb_local.formats.parsers import get_parser, select_parser
    from wtb_local.formats.rendering.renderer import PromptRenderer

    work = Path(args.work)
    renderer = PromptRenderer(AutoTokenizer.from_pretrained(args.tokenizer), model_id=TEMPLATE_MODEL)
    parser = get_parser(select_parser(TEMPLATE_MODEL, chat_template=renderer.template))
    sessions, _ = read_dataset(Path(args.dataset))
    table = Path(args.replies)
    if args.prime:  # this checkout only: the oracle writes every gold reply once, kept for every measured run
        instant = _instant_backend_class()(parser=parser, renderer=renderer)
        asyncio.run(_one_run(sessions, instant, renderer, parser, work / "prime.jsonl"))
        table.write_text(json.dumps(instant.frozen().replies, ensure_ascii=False), encoding="utf-8")
        return
    replies = {rid: (text, tokens) for rid, (text, tokens) in json.loads(table.read_text("utf-8")).items()}
    frozen = _FrozenReplies(replies)
    recording = _Recording(frozen)
    figures = asyncio.run(_one_run(sessions, recording, renderer, parser, work / "result.jsonl", args.workers))
    figures.update(prompt_digest=recording.digest(), result_digest=_result_digest(work / "result.jsonl"),
                   requests=len(recording.seen), parser=parser.name)
    Path(args.json).write_text(json.dumps(figures) + "\n", encoding="utf-8")


# --- the driver ---------------------------------------------------------------------------------------

def _baseline_tree(rev: str, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "wtb_local"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _run_worker(tree: Path, tokenizer: Path, dataset: Path, work: Path, *extra: str) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    out = work / "figures.json"
    env = {**os.environ, "PYTHONPATH": str(tree), "TOKENIZERS_PARALLELISM": "false"}
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", "--tokenizer", str(tokenizer),
                    "--dataset", str(dataset), "--work", str(work), "--json", str(out),
                    "--replies", str(work.parent / "replies.json"), *extra], check=True, env=env, cwd=str(tree))
    return json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}


def _stages(block: dict[str, Any]) -> dict[str, Any]:
    stages = dict(block.get("runner_ms_breakdown") or {})
    return {k: stages.get(k) for k in ("render", "tokenise", "parse", "judge", "parse_judge", "write", "ipc")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=32, help="sample copies (8 sessions, 32 tasks each)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each tree, alternating")
    parser.add_argument("--baseline", default=BASELINE, help="the git revision measured as 'before'")
    parser.add_argument("--vocab-size", type=int, default=8192, help="the tokenizer's BPE vocabulary")
    parser.add_argument("--json", help="write the figures here as JSON")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tokenizer", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--replies", help=argparse.SUPPRESS)
    parser.add_argument("--prime", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--render-workers", default="1,2",
                        help="also measure the checkout with these numbers of render workers (comma-separated; "
                             "'' for none)")
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    sys.path.insert(0, str(REPO))
    from tests.helpers import build_tiny_tokenizer
    from tests.helpers.workload import replicated_dataset
    from wtb_local.contract.resources import sample_dataset_path

    work = Path(tempfile.mkdtemp(prefix="wtb-bench-runner-"))
    sample = sample_dataset_path()
    template = json.loads((REPO / "tests" / "fixtures" / "rendering" / "chat_templates.json")
                          .read_text(encoding="utf-8"))[TEMPLATE_MODEL]["chat_template"]
    tokenizer = build_tiny_tokenizer(work / "tokenizer", template, special_tokens=["<tool_call>", "</tool_call>"],
                                     vocab_size=args.vocab_size, max_position_embeddings=1 << 17,
                                     corpus=sample.read_text(encoding="utf-8").splitlines())
    dataset = replicated_dataset(sample, args.copies, work / "dataset.jsonl")
    trees = {"before": (_baseline_tree(args.baseline, work / "baseline"), 0), "after": (REPO, 0)}
    for count in [int(n) for n in args.render_workers.split(",") if n.strip()]:
        trees[f"after, {count} render worker{'s' if count > 1 else ''}"] = (REPO, count)
    _run_worker(REPO, tokenizer, dataset, work / "prime", "--prime")  # the gold replies, unmeasured
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
    for round_no in range(args.rounds):
        for number, (label, (tree, workers)) in enumerate(trees.items()):
            figures = _run_worker(tree, tokenizer, dataset, work / f"{number}-{round_no}", "--workers", str(workers))
            runs[label].append(figures)
            print(f"{label:<24} round {round_no}: {figures['steps_per_s']:>8.1f} steps/s "
                  f"{figures['steps_per_cpu_s']:>8.1f} steps/CPU s "
                  f"({figures['ms_per_step']:.3f} ms/step, {figures['steps']} steps) "
                  f"stages {json.dumps(_stages(figures['throughput']))} load {figures['load_before']}",
                  file=sys.stderr)
    digests = {(f["prompt_digest"], f["result_digest"], f["requests"]) for fs in runs.values() for f in fs}
    identical = len(digests) == 1
    summary = {}
    for label, figures in runs.items():
        rates = [f["steps_per_s"] for f in figures]
        best = max(figures, key=lambda f: f["steps_per_s"])
        cpu_rates = [f["steps_per_cpu_s"] for f in figures]
        summary[label] = {"steps_per_s_median": round(statistics.median(rates), 1), "steps_per_s_runs": rates,
                          "steps_per_cpu_s_median": round(statistics.median(cpu_rates), 1),
                          "ms_per_step_median": round(1000 / statistics.median(rates), 4),
                          "stages_ms_per_step_of_best": _stages(best["throughput"]),
                          "throughput_of_best": best["throughput"]}
    ratio = round(summary["after"]["steps_per_s_median"] / summary["before"]["steps_per_s_median"], 2)
    for label, s in summary.items():
        s["ratio_to_before"] = round(s["steps_per_s_median"] / summary["before"]["steps_per_s_median"], 2)
    steps = runs["after"][0]["steps"]
    print(f"workload: {args.copies} x sample ({steps} steps), template {TEMPLATE_MODEL}, byte-level BPE "
          f"({args.vocab_size} tokens, trained on the sample), parser {runs['after'][0]['parser']}, "
          f"before = {args.baseline}")
    for label in trees:
        s = summary[label]
        print(f"{label:<24} {s['steps_per_s_median']:>8.1f} steps/s median of {s['steps_per_s_runs']}  "
              f"{s['steps_per_cpu_s_median']:>8.1f} steps per CPU second  x{s['ratio_to_before']} of before  "
              f"{s['ms_per_step_median']:.3f} ms/step  stages (ms/step, best run) "
              f"{json.dumps(s['stages_ms_per_step_of_best'])}")
    print(f"after / before: x{ratio}; prompts, token ids and result rows identical: {identical}")
    if args.json:
        Path(args.json).write_text(json.dumps({"copies": args.copies, "baseline": args.baseline,
                                               "template": TEMPLATE_MODEL, "vocab_size": args.vocab_size,
                                               "ratio": ratio, "identical": identical, "summary": summary,
                                               "runs": runs}, indent=2) + "\n", encoding="utf-8")
    if not identical:
        raise SystemExit("before and after differ in prompts, token ids or result rows")


if __name__ == "__main__":
    main()
