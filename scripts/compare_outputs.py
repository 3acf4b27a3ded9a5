"""Run a fixed list of `run`/`merge`/`rescore`/`render`/`report` commands against one source tree and write
what a user keeps into a folder, so that two trees (before and after a refactoring) can be compared with
`diff -r` (docs/architecture.md, "Checking a refactoring").

    python scripts/compare_outputs.py --tree /path/to/tree --out /tmp/compare-a [--vllm]

The commands run as `python -m wtb_local ...` subprocesses with PYTHONPATH set to `--tree`; everything else
(the tiny random-weight model, the fake OpenAI server) comes from this checkout and is the same for both
trees. Every run writes under one fixed work folder, so the paths inside the files match between trees.

Kept per option set: the manifest (the resolved run: config, settings, sources, protocol), with the fields
that measure time or name the machine/process removed; the result, score and metric files and any other
file of the run directory, with the per-step timing keys removed; the command's stdout with the throughput
line removed. The source tree's path and the fake server's port are replaced by placeholders.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

WORK = Path("/tmp/wtb-compare-work")
VECTORS = HERE / "tests" / "fixtures" / "vectors" / "sessions"
TEMPLATES = HERE / "tests" / "fixtures" / "runner" / "chat_templates.json"
QWEN = "Qwen/Qwen2.5-7B-Instruct"

# manifest keys that measure time, name the machine or the process, or the source checkout
DROP_KEYS = frozenset({
    "started", "finished", "wall_s", "throughput", "pid", "host", "hostname", "machine", "git_commit",
    "git_dirty", "packages", "latency", "runner_ms", "cached_tokens", "created", "updated", "heartbeat",
    "elapsed_s", "duration_s", "started_at", "finished_at", "time", "timestamp", "merged",
    # the sha256 of a replayed result file, which holds the recorded run's latencies
    "replay_sha256",
})
# the run-health table's last three figures before a run's status are wall-clock (latency/step, p95, wall s)
# vLLM's own log lines (a process id and a time stamp each) when it logs to stdout
VLLM_LOG = re.compile(r"^(\([\w-]+ pid=\d+\) )?(INFO|WARNING|DEBUG|ERROR) \d\d-\d\d \d\d:\d\d:\d\d ")
HEALTH_TIMES = re.compile(r"(?:\s+\S+){3}(\s+(?:complete|incomplete|interrupted|failed|killed|running|rescored))\s*$")
# stdout lines that report measured speed
DROP_LINE_PREFIXES = ("throughput:", "engine:", "loaded in", "model loaded")


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in DROP_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _manifest(data: Any) -> Any:
    """A manifest without its timing fields; a replay's config hash goes too (it hashes `replay_sha256`)."""
    if isinstance(data, dict) and isinstance(data.get("config"), dict) and data["config"].get("replay_sha256"):
        data = {k: v for k, v in data.items() if k != "config_hash"}
    return _strip(data)


def _stdout(text: str) -> str:
    kept = [HEALTH_TIMES.sub(r" <t> <t> <t>\1", line) for line in text.splitlines()
            if not line.startswith(DROP_LINE_PREFIXES) and not VLLM_LOG.match(line)]
    return "\n".join(kept) + "\n"


def _normalise_file(path: Path, text: str) -> str:
    if path.suffix == ".json":
        return json.dumps(_manifest(json.loads(text)), indent=1, sort_keys=True) + "\n"
    if path.suffix == ".jsonl":
        return "".join(json.dumps(_strip(json.loads(line)), sort_keys=True) + "\n"
                       for line in text.splitlines() if line.strip())
    if path.name == "stdout.txt":
        return _stdout(text)
    return text


def _normalise_text(text: str, tree: Path, subs: dict[str, str]) -> str:
    text = text.replace(str(tree.resolve()), "<TREE>")
    for old, new in subs.items():
        text = text.replace(old, new)
    return text


def _option_sets(model: Path, base_url: str, vllm: bool) -> list[tuple[str, list[list[str]]]]:
    """(name, commands): each command a `python -m wtb_local` argument list; `{W}` is the set's work folder."""
    script = ["--script", str(VECTORS / "script.jsonl"), "--dataset", str(VECTORS / "dataset.jsonl")]
    quiet = ["--progress", "none"]
    oracle = ["run", "--backend", "oracle", "--dataset", "sample", *quiet]
    tiny = ["--model", str(model), "--model-name", "tiny", "--dataset", "sample", "--limit", "2", *quiet]
    server = ["--backend", "openai", "--base-url", base_url, *tiny]
    sets: list[tuple[str, list[list[str]]]] = [
        ("oracle-qwen-release", [[*oracle, "--model", QWEN, "--out", "{W}/r"]]),
        ("oracle-qwen-paper", [[*oracle, "--model", QWEN, "--protocol", "paper", "--out", "{W}/r"],
                               ["rescore", "{W}/r", "--checker", "strict"],
                               ["report", "{W}/r", "--no-paper"]]),
        ("oracle-llama-paper", [[*oracle, "--model", "meta-llama/Llama-3.1-8B-Instruct", "--protocol", "paper",
                                 "--limit", "3", "--out", "{W}/r"]]),
        ("oracle-qwen3-thinking", [[*oracle, "--model", "Qwen/Qwen3-8B", "--limit", "2", "--out", "{W}/r"]]),
        ("oracle-tiny-template", [[*oracle, "--model", str(model), "--model-name", "tiny-oracle", "--limit", "2",
                                   "--template-kwarg", "enable_thinking=false", "--out", "{W}/r"]]),
        ("oracle-sessions-seed", [[*oracle, "--model", QWEN, "--sessions", "1,3", "--seed", "5",
                                   "--max-new-tokens", "64", "--out", "{W}/r"]]),
        ("scripted-release", [["run", "--backend", "scripted", *script, "--model-name", "scripted", *quiet,
                               "--out", "{W}/r"], ["rescore", "{W}/r", "--checker", "lenient"]]),
        ("scripted-paper", [["run", "--backend", "scripted", *script, "--model-name", "scripted", *quiet,
                             "--protocol", "paper", "--paper-family", "generic", "--out", "{W}/r"]]),
        ("scripted-shards-merge", [
            ["run", "--backend", "scripted", *script, "--model-name", "scripted", *quiet, "--shard", "0/2",
             "--out", "{W}/r"],
            ["run", "--backend", "scripted", *script, "--model-name", "scripted", *quiet, "--shard", "1/2",
             "--out", "{W}/r"],
            ["merge", "{W}/r"], ["report", "{W}/r", "--no-paper"]]),
        ("scripted-score", [["run", "--backend", "scripted", *script, "--model-name", "scripted", *quiet,
                             "--out", "{W}/r"],
                            ["score", "{W}/r", "--dataset", str(VECTORS / "dataset.jsonl"), "--out", "{W}/s"]]),
        ("instant", [["run", "--backend", "instant", "--model", str(model), "--dataset", "sample", "--limit", "2",
                      *quiet, "--out", "{W}/r"]]),
        ("oracle-then-replay", [[*oracle, "--model", QWEN, "--limit", "3", "--out", "{W}/a"],
                                ["run", "--backend", "replay", "--replay", "{W}/a", *quiet, "--out", "{W}/b"]]),
        ("replay-other-parser", [[*oracle, "--model", QWEN, "--limit", "2", "--out", "{W}/a"],
                                 ["run", "--backend", "replay", "--replay", "{W}/a", "--parser", "pythonic",
                                  *quiet, "--out", "{W}/b"]]),
        ("openai-tokens", [["run", *server, "--out", "{W}/r"]]),
        ("openai-text", [["run", *server, "--server-prompt", "text", "--max-num-seqs", "2", "--out", "{W}/r"]]),
        ("openai-paper", [["run", *server, "--protocol", "paper", "--out", "{W}/r"]]),
        ("openai-repeats", [["run", *server, "--temperature", "0.7", "--repeats", "2", "--out", "{W}/r"],
                            ["report", "{W}/r", "--no-paper"]]),
        ("openai-chat", [["run", "--backend", "openai-chat", "--base-url", base_url, "--model", str(model),
                          "--dataset", "sample", "--limit", "1", *quiet, "--out", "{W}/r"]]),
        ("openai-served-name", [["run", *server, "--served-model-name", str(model), "--request-timeout", "30",
                                 "--out", "{W}/r"]]),
        ("transformers-tiny", [["run", "--backend", "transformers", *tiny, "--max-new-tokens", "8",
                                "--batch-size", "4", "--out", "{W}/r"],
                               ["run", "--backend", "replay", "--replay", "{W}/r", *quiet, "--out", "{W}/b"]]),
        ("transformers-paper", [["run", "--backend", "transformers", *tiny, "--max-new-tokens", "8",
                                 "--protocol", "paper", "--paper-family", "qwen", "--limit", "1",
                                 "--out", "{W}/r"]]),
        ("render-tiny", [["render", "--model", str(model), "--dataset", "sample", "--session", "0"]]),
        ("render-paper", [["render", "--model", str(model), "--dataset", "sample", "--session", "1",
                           "--protocol", "paper"]]),
        ("render-gold-history", [["render", "--model", str(model), "--session", "2", "--task", "2", "--step", "1"],
                                 ["render", "--model", str(model), "--session", "2", "--task", "3", "--step", "1",
                                  "--protocol", "paper"],
                                 ["render", "--model", str(model), "--session", "5", "--task", "1"]]),
    ]
    if vllm:
        engine = ["--max-model-len", "8192", "--enforce-eager", "--max-new-tokens", "8"]
        sets += [
            ("vllm-tiny", [["run", "--backend", "vllm", *tiny, *engine, "--max-num-seqs", "2",
                            "--no-enable-prefix-caching", "--seed", "3", "--out", "{W}/r"]]),
            ("vllm-tiny-paper", [["run", "--backend", "vllm", *tiny, *engine, "--protocol", "paper",
                                  "--limit", "1", "--out", "{W}/r"]]),
        ]
    return sets


def _collect(work: Path, dest: Path, tree: Path, subs: dict[str, str]) -> None:
    for path in sorted(work.rglob("*")):
        if not path.is_file() or path.name.endswith(".lock"):
            continue
        target = dest / path.relative_to(work)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = _normalise_file(path, path.read_text(encoding="utf-8"))
        target.write_text(_normalise_text(text, tree, subs), encoding="utf-8")


def _tiny_model() -> Path:
    """The tests' tiny Qwen2.5 model, built once into a fixed folder (the same bytes for both trees)."""
    folder = Path("/tmp/wtb-compare-models/qwen")
    if (folder / "config.json").exists():
        return folder
    from tests.helpers import build_tiny_model
    template = json.loads(TEMPLATES.read_text(encoding="utf-8"))[QWEN]["chat_template"]
    return build_tiny_model(folder, template, special_tokens=["<tool_call>", "</tool_call>"],
                            max_position_embeddings=8192)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, help="source tree whose wtb_local runs")
    parser.add_argument("--out", type=Path, help="folder to write the kept files into")
    parser.add_argument("--normalise", type=Path, help="only apply the current normalisation to a kept folder")
    parser.add_argument("--vllm", action="store_true", help="add the vLLM option sets (minutes on a CPU)")
    parser.add_argument("--only", default="", help="comma-separated option-set names (default: all)")
    args = parser.parse_args()
    if args.normalise:  # a folder kept by an earlier version of this script, compared with a newer one
        for path in sorted(p for p in args.normalise.rglob("*") if p.is_file()):
            path.write_text(_normalise_file(path, path.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    if args.tree is None or args.out is None:
        parser.error("--tree and --out are needed")

    from tests.run.fake_openai import fake_openai_server

    model = _tiny_model()
    env = {**os.environ, "PYTHONPATH": str(args.tree.resolve()), "HF_HUB_OFFLINE": "1",
           "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"), "NO_COLOR": "1",
           "COLUMNS": "200"}
    env.pop("WTB_BACKEND", None)
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    only = {name for name in args.only.split(",") if name}
    failures = 0
    with fake_openai_server(str(model)) as server:
        subs = {server.base_url: "http://127.0.0.1:<PORT>/v1"}
        for name, commands in _option_sets(model, server.base_url, args.vllm):
            if only and name not in only:
                continue
            work = WORK / name
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            started = time.monotonic()
            outputs = []
            for number, command in enumerate(commands):
                argv = [part.replace("{W}", str(work)) for part in command]
                done = subprocess.run([sys.executable, "-m", "wtb_local", *argv], capture_output=True, text=True,
                                      env=env, cwd=str(WORK), timeout=1200, check=False)
                outputs.append(f"$ {number}: exit {done.returncode}\n" + done.stdout)
                if done.returncode != 0:
                    failures += 1
                    print(f"{name} command {number} exited {done.returncode}:\n{done.stderr[-2000:]}",
                          file=sys.stderr)
            (work / "stdout.txt").write_text("".join(outputs), encoding="utf-8")
            _collect(work, args.out / name, args.tree, subs)
            print(f"{name}: {len(commands)} command(s), {time.monotonic() - started:.1f} s", flush=True)
    print(f"{failures} command(s) failed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
