"""One model's factors measured and one gap decomposed: the runs `explain --plan MODEL_DIR` lists (three
seeds, the family's alternative parsers, the template override where one serves the model, the other
engine, `--protocol paper`), run one after the other, then `explain` over all of them, then the figures
(docs/explain.md, "On a real model"; docs/explain-real-model.md).

    python scripts/explain_real_model.py MODEL_DIR OUT_DIR [--engine vllm] [--cpu] [--generated-parsers]
        [--context-window TOKENS]
        [--dataset sample] [--sessions 0,1] [--limit N] [--max-new-tokens N] [--temperature T]
        [--run-option '...']
    python scripts/explain_real_model.py --figures-from OUT_DIR [--gap RUN] [--page FILE] [--plot FILE]

Writes OUT_DIR/plan.sh (the commands), OUT_DIR/plan.json, OUT_DIR/runs/<run>/ (each resumes when the
script runs again), OUT_DIR/logs/<run>.log (each command's output), OUT_DIR/timings.json (each command's
wall time), OUT_DIR/machine.json, OUT_DIR/explain/ (explain.md, explain.json, explain.html, the CSVs and
plots/waterfall.png), and the figures: OUT_DIR/figures.json and OUT_DIR/figures.md. A run that fails stops
the script with one line naming its log: a failed run is a fault to fix and rerun, never a result. `--cpu`
adds what the CPU build of vLLM needs (float32, 20% of the RAM, no graphs, a 1 GiB KV cache).

`--figures-from OUT_DIR` makes the figures again from a finished OUT_DIR (no generation): `--gap RUN`
chooses the comparison shown as a waterfall (default: the largest task gap), `--page FILE` writes
figures.md between the figure marks of that page, `--plot FILE` draws that comparison's waterfall.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CPU_OPTIONS = "--dtype float32 --gpu-memory-utilization 0.2 --enforce-eager"
BEGIN = "<!-- figures: made by scripts/explain_real_model.py --figures-from OUT_DIR --page; begin -->"
END = "<!-- figures: end -->"
STAGES = ("prompt", "completion", "parse", "verdict")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", nargs="?", help="the model: a local directory (or a hub id in the local cache)")
    parser.add_argument("out_dir", nargs="?", help="where the runs, logs, explanation and figures go")
    parser.add_argument("--engine", default=None, help="the baseline's engine (default: explain --plan's)")
    parser.add_argument("--cpu", action="store_true", help="the CPU build of vLLM's settings for every run")
    parser.add_argument("--generated-parsers", action="store_true",
                        help="also run each alternative parser with generation (explain --plan --generated-parsers)")
    parser.add_argument("--context-window", type=int, default=None, metavar="TOKENS",
                        help="also a run with this --max-model-len (explain --plan --context-window)")
    parser.add_argument("--dataset", default=None, help="sample, release or a file (default: the run's)")
    parser.add_argument("--sessions", default=None, help="only these sessions (ids or numbers, comma-separated)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N sessions")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="the generation budget of every run")
    parser.add_argument("--temperature", type=float, default=None, help="for a model that decodes greedily")
    parser.add_argument("--run-option", action="append", default=[], help="more `run` options for every run")
    parser.add_argument("--run-timeout", type=float, default=6 * 3600.0, help="seconds one command may take")
    parser.add_argument("--figures-from", default=None, metavar="OUT_DIR",
                        help="only the figures, from a finished OUT_DIR (no generation)")
    parser.add_argument("--gap", default=None, metavar="RUN", help="the comparison shown as a waterfall")
    parser.add_argument("--page", default=None, metavar="FILE", help="write the figures between this page's marks")
    parser.add_argument("--plot", default=None, metavar="FILE", help="draw the waterfall of --gap here")
    args = parser.parse_args(argv)
    if args.figures_from is None and (args.model_dir is None or args.out_dir is None):
        parser.error("give MODEL_DIR OUT_DIR, or --figures-from OUT_DIR")
    if args.figures_from is not None and args.model_dir is not None:
        parser.error("--figures-from OUT_DIR takes no MODEL_DIR")
    return args


def _run_options(args: argparse.Namespace) -> list[str]:
    options = list(args.run_option)
    for flag, value in (("--dataset", args.dataset), ("--sessions", args.sessions), ("--limit", args.limit),
                        ("--max-new-tokens", args.max_new_tokens), ("--temperature", args.temperature)):
        if value is not None:
            options.append(f"{flag} {value}")
    if args.cpu:
        options.append(CPU_OPTIONS)
    return options


def _invocation(args: argparse.Namespace) -> str:
    """The command line as the page shows it, the model and output folders named, not spelt out."""
    words = ["python", "scripts/explain_real_model.py", "MODEL_DIR", "OUT_DIR"]
    for flag in ("engine", "cpu", "generated_parsers", "context_window", "dataset", "sessions", "limit", "max_new_tokens",
                 "temperature", "run_option"):
        value = getattr(args, flag)
        name = "--" + flag.replace("_", "-")
        if value is True:
            words.append(name)
        elif isinstance(value, list):
            words += [word for item in value for word in (name, shlex.quote(item))]
        elif value not in (None, False):
            words += [name, shlex.quote(str(value))]
    return " ".join(words)


def _machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu or platform.processor(), "cores": os.cpu_count(), "system": platform.system()}


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


# ---- the figures: read from OUT_DIR only


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _steps(run_dir: Path) -> Iterator[tuple[tuple[str, int, str], dict[str, Any], dict[str, Any]]]:
    """((session id, task index, step), the step's input, its output) of a run's result file."""
    for result in sorted(run_dir.glob("result/*/Wild-Tool-Bench_result.jsonl")):
        for line in result.read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip() else {}
            for position, task in enumerate(row.get("result") or []):
                log = task.get("inference_log") or {}
                for name in sorted((k for k in log if k.startswith("step_")), key=lambda k: int(k[5:])):
                    entry = log[name]
                    yield ((row["id"], log.get("task_idx", position), name), entry.get("inference_input") or {},
                           entry.get("inference_output") or {})


def run_facts(run_dir: Path) -> dict[str, Any]:
    """What the tables say of one run, from its manifest and result file: engine, parser, protocol,
    temperature, steps, calls outside the parser's format (steps per kind), length cuts, steps a replay
    had no completion for, and the wall time and generated tokens of its sessions (engine start aside)."""
    from wtb_local.analysis.commands.parser_comparison import UNRECORDED

    manifest = _read(run_dir / "manifest.json")
    config = manifest.get("config") or {}
    sampling = manifest.get("sampling_used") or config.get("sampling") or {}
    facts: dict[str, Any] = {"engine": config.get("backend"), "parser": config.get("parser"),
                             "protocol": (manifest.get("protocol") or {}).get("name"),
                             "temperature": sampling.get("temperature"), "steps": 0, "deviations": {},
                             "length": 0, "unrecorded": 0, "wall_s": 0.0, "generated_tokens": 0}
    for invocation in manifest.get("invocations") or []:  # those that ran sessions (a resume runs none)
        if invocation.get("sessions_run"):
            facts["wall_s"] += float(invocation.get("wall_s") or 0.0)
            facts["generated_tokens"] += int(invocation.get("generated_tokens") or 0)
    for _key, _inputs, output in _steps(run_dir):
        facts["steps"] += 1
        deviation = output.get("format_deviation")
        if isinstance(deviation, dict):
            facts["deviations"][deviation["kind"]] = facts["deviations"].get(deviation["kind"], 0) + 1
        facts["length"] += output.get("finish_reason") == "length"
        facts["unrecorded"] += str(output.get("error_reason") or "").startswith(UNRECORDED)
    facts["deviations"] = dict(sorted(facts["deviations"].items()))
    return facts


def same_completions(a: Path, b: Path) -> dict[str, int]:
    """Steps of `b` shown the same conversation as in `a` (messages and tools), and of those, the steps
    whose completion is the same text: how far the two runs' generation agrees, verdicts aside."""
    recorded = {key: (inputs, output.get("raw")) for key, inputs, output in _steps(a)}
    same_prompt = same_text = 0
    for key, inputs, output in _steps(b):
        if key in recorded and recorded[key][0] == inputs:
            same_prompt += 1
            same_text += recorded[key][1] is not None and recorded[key][1] == output.get("raw")
    return {"same_conversation": same_prompt, "same_completion": same_text}


def _name(label: str, runs: Path) -> str:
    path = Path(label)
    return path.relative_to(runs).as_posix() if path.is_relative_to(runs) else label


def _short(value: Any, runs: Path) -> Any:
    """Every run label (an absolute path under OUT_DIR/runs) as its name under it, so the figures do not
    depend on where OUT_DIR was."""
    if isinstance(value, dict):
        return {_short(k, runs): _short(v, runs) for k, v in value.items()}
    if isinstance(value, list):
        return [_short(v, runs) for v in value]
    if isinstance(value, str) and str(runs) in value:
        return value.replace(f"{runs}/", "")
    return value


def figures(out: Path) -> dict[str, Any]:
    """Everything the page shows, from a finished OUT_DIR."""
    out = out.resolve()
    runs = out / "runs"
    plan = _read(out / "plan.json")
    explained = _short(_read(out / "explain" / "explain.json"), runs)
    timings = _read(out / "timings.json")
    machine = _read(out / "machine.json")
    names = [run["label"] for run in explained["runs"]]
    base = names[0]
    rows = []
    for entry in plan["runs"]:
        for name in (n for n in names if n == entry["name"] or n.startswith(entry["name"] + "/")):
            summary = next(run for run in explained["runs"] if run["label"] == name)
            rows.append({"run": name, "planned": entry["name"], "factor": entry["factor"],
                         "task": summary["task_accuracy"],
                         "session": summary["session_accuracy"], **run_facts(runs / name),
                         **same_completions(runs / base, runs / name)})
    return {"command": plan["command"], "explain_command": plan["explain"], "notes": plan["notes"],
            "machine": machine, "tasks": explained["tasks"], "sessions": explained["sessions"],
            "test": explained["test"], "runs": rows, "explain_s": timings.get("explain"),
            "factors": [f for f in explained["factors"] if f["differ"]],
            "equal": [f["name"] for f in explained["factors"] if not f["differ"]],
            "pairs": [{k: v for k, v in pair.items()} for pair in explained["pairs"]],
            "decompositions": explained["decompositions"], "seeds": explained["seeds"],
            "explain_notes": explained["notes"]}


def _label(run: dict[str, Any]) -> str:
    return run.get("label", run.get("run", ""))


def chosen_gap(data: dict[str, Any], name: str | None) -> dict[str, Any]:
    """The decomposition shown: the one into run `name`, else the largest task gap (then session gap;
    ties: the plan's order)."""
    items = data["decompositions"]
    if name is not None:
        found = [item for item in items if item["b"] == name]
        if not found:
            raise SystemExit(f"--gap {name}: no comparison into that run ({', '.join(i['b'] for i in items)})")
        return found[0]
    return max(items, key=lambda i: (abs(i["task"]["b"] - i["task"]["a"]), abs(i["session"]["b"] - i["session"]["a"]),
                                     -items.index(i)))


def _pct(value: float) -> str:
    return f"{value:.2f}"


def _signed(value: float) -> str:
    return f"{value:+.2f}"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def _deviations(kinds: dict[str, int]) -> str:
    return ", ".join(f"{kind} {count}" for kind, count in kinds.items()) or "none"


def _differing(data: dict[str, Any], a: str, b: str) -> list[str]:
    return [f["name"] for f in data["factors"] if f["values"][a] != f["values"][b]]


def figures_markdown(data: dict[str, Any], gap: str | None = None, plot: str | None = None) -> str:
    """The page's figures: the runs, the seed spread, each factor against the baseline, the waterfalls and
    the one gap decomposed, from `figures()`'s data."""
    base = data["runs"][0]["run"]
    machine = data["machine"]
    text = [f"Made on {machine['cores']} CPU cores ({machine['cpu']}), float32, with", "", "```text",
            data["command"], "```", "",
            f"Compared on {data['tasks']} tasks ({data['sessions']} sessions). Notes of the plan: "
            + "; ".join(data["notes"]) + "." if data["notes"] else "", ""]

    text += [("**The runs.** Accuracy over the compared tasks; *outside the format*: steps whose calls the run's "
             "parser did not read, by the wrapper they were written in; *same as the baseline*: steps shown "
             f"the conversation `{base}` was shown at that step, and of those, the steps with the same "
             "completion; time: the run's sessions, from the first to the last (engine start aside), and the "
             "tokens they generated."), ""]
    rows = []
    for run in data["runs"]:
        unrecorded = f" ({run['unrecorded']} not recorded)" if run["unrecorded"] else ""
        rows.append([f"`{run['run']}`", run["factor"], run["engine"], run["parser"], run["protocol"],
                     "" if run["temperature"] is None else run["temperature"], _pct(run["task"]),
                     _pct(run["session"]), f"{run['steps']}{unrecorded}", _deviations(run["deviations"]),
                     run["length"], f"{run['same_conversation']} / {run['same_completion']}",
                     f"{run['wall_s']:.1f} s, {run['generated_tokens']} tokens"])
    text += _table(["run", "measures", "engine", "parser", "protocol", "temperature", "task %", "session %",
                    "steps", "outside the format (steps)", "cut at the token limit",
                    "same as the baseline (conversation / completion)", "time, tokens"], rows)
    text.append("")

    for group in data["seeds"]:
        task, session = group["task_accuracy"], group["session_accuracy"]
        text += [(f"**Seeds** ({len(group['runs'])} seeds of `{group['group']}`: "
                 f"{', '.join(group['seeds'])}): task accuracy {_pct(task['mean'])} ± {_pct(task['stderr'])} "
                 f"(per seed {', '.join(_pct(v) for v in task['values'])}), session accuracy "
                 f"{_pct(session['mean'])} ± {_pct(session['stderr'])} (mean ± standard error); "
                 f"{100 * group['flip_rate']:.1f}% of the tasks are not the same in every seed, and two seeds "
                 f"flip {100 * group['pairwise_flip_rate']:.1f}% of the tasks on average."), ""]

    text += [f"**Each factor against `{base}`** ({data['test']}; the seed pairs first, for the noise).", ""]
    rows = []
    for pair in data["pairs"]:
        if pair["a"] != base and not pair["seed_pair"]:
            continue
        noise = "seed pair" if pair["seed_pair"] else ("yes" if pair["beyond_noise"] else "no")
        where = ", ".join(f"{stage} {pair['stages'][stage]}" for stage in STAGES if pair["stages"][stage]) or "-"
        rows.append([f"`{pair['a']}` → `{pair['b']}`", ", ".join(_differing(data, pair["a"], pair["b"])) or "none",
                     _signed(pair["task_gap"]), _signed(pair["session_gap"]),
                     f"{pair['flips']} ({pair['only_a']} / {pair['only_b']})", f"{pair['p_tasks']:.4f}", noise,
                     where])
    text += _table(["runs", "factors that differ", "task gap", "session gap",
                    "flipped tasks (first only / second only correct)", "p (tasks)", "beyond noise",
                    "first divergence"], rows)
    text.append("")

    text += [("**The gap, one factor at a time**, from the baseline to each other run (task accuracy, points; "
             "the parts add up to the gap):"), ""]
    rows = []
    for item in data["decompositions"]:
        parts = {part["part"]: part for part in item["parts"]}
        rows.append([f"`{item['b']}`", _pct(item["task"]["a"]),
                     *(f"{_signed(parts[p]['task'])} ({parts[p]['tasks_changed']})" for p in
                       ("parser", "checker", "generation")), _pct(item["task"]["b"])])
    text += _table(["into", "baseline", "parser (tasks changed)", "checker (tasks changed)",
                    "generation (tasks changed)", "run"], rows)
    text.append("")

    item = chosen_gap(data, gap)
    text += [(f"**One gap decomposed: `{item['a']}` → `{item['b']}`** ({item['tasks']} tasks, "
             f"{item['sessions']} sessions):"), ""]
    rows = [[f"`{item['a']}`", _pct(item["task"]["a"]), _pct(item["session"]["a"]), "", "", "start"]]
    for part in item["parts"]:
        how = part["how"] + (f"; {part['note']}" if part["note"] else "")
        rows.append([f"+ {part['part']}", _signed(part["task"]), _signed(part["session"]), part["tasks_changed"],
                     ", ".join(part["factors"]) or "none", how])
    rows.append([f"`{item['b']}`", _pct(item["task"]["b"]), _pct(item["session"]["b"]), "", "", "end"])
    text += _table(["step", "task %", "session %", "tasks changed", "factors", "how"], rows)
    text.append("")
    pair = next(p for p in data["pairs"] if p["a"] == item["a"] and p["b"] == item["b"])
    if pair["flipped"]:
        text += ["Its flipped tasks, each with its first point of divergence:", ""]
        text += _table(["task", "verdicts", "first divergence", "step", "factors", "detail"],
                       [[flip["task"], f"{flip['a']} → {flip['b']}", flip["stage"],
                         "" if flip["step"] is None else flip["step"], ", ".join(flip["factors"]) or "none",
                         flip["detail"]] for flip in pair["flipped"]])
        text.append("")
    if plot:
        text += [f"![The waterfall of {item['b']}]({plot})", ""]
    return "\n".join(line for i, line in enumerate(text) if line or (i and text[i - 1])).rstrip() + "\n"


def write_page(page: Path, block: str) -> None:
    """`block` between the page's figure marks (which stay)."""
    text = page.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{page}: no figure marks ({BEGIN} ... {END})")
    head, rest = text.split(BEGIN, 1)
    _old, tail = rest.split(END, 1)
    page.write_text(f"{head}{BEGIN}\n{block}{END}{tail}", encoding="utf-8")


def make_figures(out: Path, gap: str | None, page: str | None, plot: str | None) -> None:
    """figures.json and figures.md into OUT_DIR; the page and the plot where asked."""
    data = figures(out)
    (out / "figures.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    link = os.path.relpath(plot, Path(page).parent) if plot and page else plot
    block = figures_markdown(data, gap, link)
    (out / "figures.md").write_text(block, encoding="utf-8")
    if plot:
        from wtb_local.analysis.reports.plots import write_waterfall

        write_waterfall([chosen_gap(data, gap)], Path(plot))
    if page:
        write_page(Path(page), block)
    print(f"figures: {out / 'figures.md'}")


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from wtb_local.analysis.explain.plan import PlanError, make_plan, plan_script
    from wtb_local.engines import engine_backends

    args = _arguments(argv)
    if args.figures_from is not None:
        make_figures(Path(args.figures_from), args.gap, args.page, args.plot)
        return 0
    out = Path(args.out_dir).resolve()
    (out / "logs").mkdir(parents=True, exist_ok=True)
    try:
        plan = make_plan(args.model_dir, engines=engine_backends(), runs_dir=str(out / "runs"), engine=args.engine,
                         run_options=_run_options(args), explain_out=str(out / "explain"),
                         generated_parsers=args.generated_parsers, context_window=args.context_window)
    except PlanError as exc:
        sys.exit(f"error: {exc}")
    (out / "plan.sh").write_text(plan_script(plan), encoding="utf-8")
    shown = _invocation(args)
    (out / "plan.json").write_text(json.dumps({
        "command": shown, "notes": [note.replace(str(args.model_dir), "MODEL_DIR") for note in plan.notes],
        "explain": " ".join(["python -m wtb_local", *(shlex.quote(a.replace(str(out), "OUT_DIR"))
                                                       for a in plan.explain_args)]),
        "runs": [{"name": run.name, "factor": run.factor, "why": run.why} for run in plan.runs]},
        indent=2) + "\n", encoding="utf-8")
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
    (out / "machine.json").write_text(json.dumps(_machine(), indent=2) + "\n", encoding="utf-8")
    print(f"explanation: {out / 'explain' / 'explain.md'} (the terminal text: {out / 'logs' / 'explain.log'})")
    make_figures(out, None, None, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
