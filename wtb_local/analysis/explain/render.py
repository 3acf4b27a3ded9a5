"""The explanation as tables (the report's `Section`s, drawn by its renderers) and files: terminal text,
Markdown, one CSV per table, JSON (the explanation itself), HTML with the waterfall plot, PNG (the same
layout as `report --out`: tables, then `plots/`)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wtb_local.analysis.reports.sections import Section

TITLE = "WildToolBench: why the numbers differ"
PLOT_NAME = "waterfall.png"
SHOWN_FLIPS = 10  # flipped tasks per pair printed on the terminal (all of them in the files)


def _p(value: float) -> str:
    return "<0.0001" if value < 0.0001 else f"{value:.4f}"


def _signed(value: float) -> str:
    return f"{value:+.2f}"


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _se(value: float) -> str:
    return "-" if math.isnan(value) else f"±{value:.2f}"


def _ci(low: float, high: float, signed: bool = False) -> str:
    if math.isnan(low):
        return "-"
    return f"{low:+.2f}..{high:+.2f}" if signed else f"{low:.0f}-{high:.0f}"


# What each explain column means, shown under its table and as the header's hover title (tasks are named
# session/task, the task numbered from 0 as in the result files and the report's trajectory browser).
PAIR_WORDS = {
    "b": "the second run of the pair", "task_gap": "task accuracy of the second minus the first, points",
    "session_gap": "session accuracy of the second minus the first, points",
    "flips": "tasks judged correct in one run and wrong in the other",
    "flip_rate": "flips as % of the compared tasks", "only_a": "tasks correct in the first run only",
    "only_b": "tasks correct in the second run only", "p_tasks": "exact McNemar p-value over the flipped tasks",
    "p_sessions": "the same over whole sessions", "noise": "yes when p tasks < 0.05; seed pair: two seeds of one run",
    "gap_se": "the task gap's standard error, paired and clustered by session (docs/reports.md 'Uncertainty')",
    "gap_ci": "the task gap's 95% interval from that error",
    "noise_clustered": "yes when that interval excludes 0 (the clustered test; the exact McNemar test treats "
                       "tasks as independent)",
    "prompt": "flips whose first divergence is the prompt", "completion": "flips that first diverge in the completion",
    "parse": "flips that first diverge in how the reply was parsed",
    "verdict": "flips with the same parsed reply and another verdict (the checker)"}
FLIP_WORDS = {
    "b": "the second run of the pair", "task": "session/task, the task numbered from 0",
    "verdicts": "the first run's verdict -> the second's", "stage": "the first stage where the two runs differ",
    "step": "the step where they first differ, from 0", "factors": "the factors of that stage whose values differ",
    "detail": "what differs there"}
WATERFALL_WORDS = {
    "task": "task accuracy after this step; + rows: the change it makes, points",
    "session": "session accuracy after this step; + rows: the change, points",
    "changed": "tasks whose verdict this step changes", "factors": "the factors this step replaces",
    "how": "how the step is measured"}
SEED_WORDS = {
    "seeds": "the seeds of the --repeats run", "task": "mean task accuracy ± its standard error",
    "session": "mean session accuracy ± its standard error", "values": "task accuracy of each seed",
    "flip_rate": "% of tasks whose verdict is not the same in every seed",
    "pairwise": "% of tasks two seeds judge differently, on average over the seed pairs"}


def run_section(data: dict[str, Any]) -> Section:
    section = Section("runs", f"Runs compared ({data['tasks']} tasks, {data['sessions']} whole sessions)",
                      [("task_accuracy", "task %"), ("task_se", "task ± se"), ("task_ci", "task 95% CI"),
                       ("session_accuracy", "session %"), ("session_se", "session ± se"), ("session_ci", "session 95% CI"),
                       ("tasks", "n"), ("seed", "seed"), ("group", "seed group")], label_header="run",
                      definitions={"task_accuracy": "% of the compared tasks judged correct",
                                   "task_se": "its standard error, clustered by session (docs/reports.md "
                                              "'Uncertainty')",
                                   "task_ci": "its 95% interval (Wilson's at the clustered effective n)",
                                   "session_accuracy": "% of the whole sessions compared whose every task is correct",
                                   "session_se": "its binomial standard error",
                                   "session_ci": "its 95% interval (Wilson's)",
                                   "tasks": "the tasks compared (n of the task figures)",
                                   "seed": "the run's sampling seed, as recorded",
                                   "group": "the --repeats run this seed belongs to (empty: a single run)"},
                      note="Accuracy over the tasks every run has (sessions: those whose every task is compared).")
    for run in data["runs"]:
        section.rows.append({"label": run["label"], "kind": "ours", "task_accuracy": run["task_accuracy"],
                             "task_se": _se(run["task_se"]), "task_ci": _ci(run["task_low"], run["task_high"]),
                             "session_accuracy": run["session_accuracy"], "session_se": _se(run["session_se"]),
                             "session_ci": _ci(run["session_low"], run["session_high"]), "tasks": data["tasks"],
                             "seed": run["seed"],
                             "group": run["group"] or ""})
    return section


def factor_sections(data: dict[str, Any]) -> list[Section]:
    labels = [run["label"] for run in data["runs"]]
    columns = [("stage", "stage"), *((f"r{i}", label) for i, label in enumerate(labels))]
    factor_words = {"stage": "where the factor acts: tasks, prompt, completion, parse or verdict (docs/explain.md)",
                    **{f"r{i}": f"the factor's value in {label}, as its manifest records it"
                       for i, label in enumerate(labels)}}
    differ = Section("factors_differ", "Factors that differ", columns, label_header="factor", percent=False,
                     definitions=factor_words,
                     note="Read from each run's manifest (docs/explain.md, 'Factors'); a replay's generation "
                     "factors are those of the run it replays.")
    equal = Section("factors_equal", "Factors that are equal", [("stage", "stage"), ("value", "value"),
                                                                ("source", "read from")],
                    label_header="factor", percent=False,
                    definitions={"stage": factor_words["stage"], "value": "the value every run records",
                                 "source": "the manifest fields it is read from"})
    for item in data["factors"]:
        if item["differ"]:
            differ.rows.append({"label": item["name"], "kind": "ours", "stage": item["stage"],
                                **{f"r{i}": item["values"][label] for i, label in enumerate(labels)}})
        else:
            equal.rows.append({"label": item["name"], "kind": "ours", "stage": item["stage"],
                               "value": next(iter(item["values"].values())), "source": item["source"]})
    return [differ, equal]


def pair_section(data: dict[str, Any]) -> Section:
    columns = [("b", "vs"), ("task_gap", "task gap"), ("session_gap", "session gap"), ("flips", "flips"),
               ("flip_rate", "flipped %"), ("only_a", "only first correct"), ("only_b", "only second correct"),
               ("p_tasks", "p tasks"),
               ("p_sessions", "p sessions"), ("noise", "beyond noise"), ("gap_se", "gap ± se"),
               ("gap_ci", "gap 95% CI"), ("noise_clustered", "beyond noise (clustered)"), ("prompt", "prompt"),
               ("completion", "completion"), ("parse", "parse"), ("verdict", "verdict")]
    section = Section("pairs", "Verdict flips per pair, by first point of divergence", columns,
                      label_header="run", percent=False, definitions=PAIR_WORDS,
                      note=f"Gaps: second minus first, accuracy points. p: {data['test']}; 'beyond noise' when "
                      "p < 0.05 over tasks; 'seed pair' marks two seeds of one --repeats run"
                      + (f"; two seeds flip {_pct(data['pairs'][0]['seed_flip_rate'])} of the tasks on average."
                         if data["pairs"] and data["pairs"][0]["seed_flip_rate"] is not None else "."))
    for pair in data["pairs"]:
        noise = "seed pair" if pair["seed_pair"] else ("yes" if pair["beyond_noise"] else "no")
        section.rows.append({"label": pair["a"], "kind": "ours", "b": pair["b"],
                             "task_gap": _signed(pair["task_gap"]), "session_gap": _signed(pair["session_gap"]),
                             "flips": pair["flips"], "flip_rate": _pct(pair["flip_rate"]),
                             "only_a": pair["only_a"], "only_b": pair["only_b"],
                             "p_tasks": _p(pair["p_tasks"]), "p_sessions": _p(pair["p_sessions"]), "noise": noise,
                             "gap_se": _se(pair["task_gap_se"]),
                             "gap_ci": _ci(pair["task_gap_low"], pair["task_gap_high"], signed=True),
                             "noise_clustered": "yes" if pair["beyond_noise_clustered"] else "no",
                             **pair["stages"]})
    return section


def flip_section(data: dict[str, Any], limit: int | None = None) -> Section:
    columns = [("b", "vs"), ("task", "task"), ("verdicts", "verdicts"), ("stage", "first divergence"),
               ("step", "step"), ("factors", "factors of that stage that differ"), ("detail", "detail")]
    section = Section("flips", "Flipped tasks and where they diverge", columns, label_header="run",
                      percent=False, definitions=FLIP_WORDS)
    hidden = 0
    for pair in data["pairs"]:
        shown = pair["flipped"] if limit is None else pair["flipped"][:limit]
        hidden += len(pair["flipped"]) - len(shown)
        for flip in shown:
            section.rows.append({"label": pair["a"], "kind": "ours", "b": pair["b"], "task": flip["task"],
                                 "verdicts": f"{flip['a']} -> {flip['b']}", "stage": flip["stage"],
                                 "step": "" if flip["step"] is None else flip["step"],
                                 "factors": ", ".join(flip["factors"]) or "none", "detail": flip["detail"]})
    if hidden:
        section.note = f"{hidden} more flipped task(s) in flips.csv and explain.json (--out)."
    return section


def waterfall_section(data: dict[str, Any]) -> Section:
    columns = [("task", "task %"), ("session", "session %"), ("changed", "tasks changed"),
               ("factors", "factors"), ("how", "how")]
    section = Section("waterfall", "The gap, one factor at a time (first run -> each other run)", columns,
                      label_header="step", definitions=WATERFALL_WORDS,
                      note="Parser and checker are replaced without generation (re-parse of the recorded "
                      "completions, re-scoring); generation is the rest. The parts add up to the gap.")
    for item in data["decompositions"]:
        section.rows.append({"label": item["a"], "kind": "ours", "task": item["task"]["a"],
                             "session": item["session"]["a"], "changed": "", "factors": "", "how": "start"})
        for part in item["parts"]:
            how = part["how"] + (f"; {part['note']}" if part["note"] else "")
            section.rows.append({"label": f"+ {part['part']}", "kind": "diff", "task": part["task"],
                                 "session": part["session"], "changed": part["tasks_changed"],
                                 "factors": ", ".join(part["factors"]) or "none", "how": how})
        section.rows.append({"label": item["b"], "kind": "ours", "task": item["task"]["b"],
                             "session": item["session"]["b"], "changed": "", "factors": "", "how": "end"})
    return section


def seed_section(data: dict[str, Any]) -> Section:
    columns = [("seeds", "seeds"), ("task", "task % (mean ± se)"), ("session", "session % (mean ± se)"),
               ("values", "task % per seed"), ("flip_rate", "tasks not the same in every seed"),
               ("pairwise", "flips per seed pair")]
    section = Section("seeds", "Seed spread (--repeats)", columns, label_header="run", percent=False,
                      definitions=SEED_WORDS,
                      note="Mean ± standard error over the seeds; a pair of runs whose flips are no more "
                      "than a seed pair's is within the seeds' noise.")
    for group in data["seeds"]:
        task, session = group["task_accuracy"], group["session_accuracy"]
        section.rows.append({"label": group["group"], "kind": "ours", "seeds": ", ".join(group["seeds"]),
                             "task": f"{task['mean']:.2f} ± {task['stderr']:.2f}",
                             "session": f"{session['mean']:.2f} ± {session['stderr']:.2f}",
                             "values": ", ".join(f"{v:.2f}" for v in task["values"]),
                             "flip_rate": _pct(group["flip_rate"]), "pairwise": _pct(group["pairwise_flip_rate"])})
    return section


def sections(data: dict[str, Any], flip_limit: int | None = None) -> list[Section]:
    """Every table, in reading order; empty ones left out."""
    found = [run_section(data), *factor_sections(data), pair_section(data), flip_section(data, flip_limit),
             waterfall_section(data), seed_section(data)]
    return [section for section in found if section.rows]


def _json_ready(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 6)
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_ready(v) for v in value]
    return value


def explanation_json(data: dict[str, Any]) -> str:
    return json.dumps(_json_ready(data), indent=2, ensure_ascii=False) + "\n"


def plain(data: dict[str, Any]) -> str:
    """What the terminal shows: every table (the flipped tasks capped per pair), then the notes."""
    from wtb_local.analysis.reports.render import section_plain  # deferred: start-up

    text = [section_plain(section) for section in sections(data, SHOWN_FLIPS)]
    text += [f"note: {note}" for note in data["notes"]]
    return "\n\n".join(text) + "\n"


@dataclass
class Written:
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def write_explanation(data: dict[str, Any], out_dir: str | Path, formats: Sequence[str]) -> Written:
    """explain.md, <table>.csv, explain.json, explain.html and plots/waterfall.png into `out_dir` (the chosen
    formats); without matplotlib the plot is skipped with a note."""
    from wtb_local.analysis.reports import plots as plotting
    from wtb_local.analysis.reports.build import no_matplotlib  # deferred: start-up
    from wtb_local.analysis.reports.render import report_markdown, section_csv  # deferred: start-up

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = Written(notes=list(data["notes"]))
    tables = sections(data)
    plot = None
    if ("png" in formats or "html" in formats) and data["decompositions"]:
        if plotting.available():
            plot = plotting.write_waterfall(data["decompositions"], out / "plots" / PLOT_NAME)
            if "png" in formats:
                written.files.append(plot)
        else:
            written.notes.append(no_matplotlib(f"plots/{PLOT_NAME} skipped"))
    if "md" in formats:
        path = out / "explain.md"
        path.write_text(report_markdown(tables, [PLOT_NAME] if plot is not None and "png" in formats else [],
                                        written.notes, title=TITLE), encoding="utf-8")
        written.files.append(path)
    if "csv" in formats:
        for section in tables:
            path = out / f"{section.key}.csv"
            path.write_text(section_csv(section), encoding="utf-8")
            written.files.append(path)
    if "json" in formats:
        path = out / "explain.json"
        path.write_text(explanation_json(data), encoding="utf-8")
        written.files.append(path)
    if "html" in formats:
        from wtb_local.analysis.reports.html import report_html  # deferred: start-up

        path = out / "explain.html"
        path.write_text(report_html(tables, [], [plot] if plot is not None else [], written.notes, title=TITLE),
                        encoding="utf-8")
        written.files.append(path)
    if plot is not None and "png" not in formats:  # drawn only to be embedded in the HTML
        plot.unlink()
        if not any(plot.parent.iterdir()):
            plot.parent.rmdir()
    return written
