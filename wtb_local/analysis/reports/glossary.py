"""What every report column means, said on the page where it appears (a legend under each table and a hover
title on each header). Keyed by the column's key in its `Section`; a section may add its own (explain's
tables). The AP/OP sentences follow docs/evaluation.md §6 and docs/paper-protocol.md."""

from __future__ import annotations

from wtb_local.benchmark.scoring.taxonomy import LABELS, PAPER_COLUMNS

_ACCURACY = "% of {what} judged correct"

AP_RATE = (
    "AP (accomplished progress): step entries left in the scored log over gold nodes, summed over the "
    "sequential (S) and mixed (S+P) multi-tool tasks. Steps judged wrong count too (the released checker "
    "deletes only the step after an argument error), so AP can be well above 0 with no call right; gold counts "
    "nodes while one step may hold parallel calls, so a perfect answer can stay below 100. The checker changes "
    "it: the lenient checker (the paper harness's: --protocol paper, rescore --checker lenient) counts the "
    "right calls over the nodes, so with no call right its AP is 0 where the strict checker's is not.")
OP_RATE = (
    "OP (optimal path): % of the parallel (P) and mixed (S+P) multi-tool tasks judged correct with no more "
    "steps than the shortest gold path. A checker changes it as it changes which tasks are correct.")

COLUMN_DEFINITIONS: dict[str, str] = {
    # Table 6
    "single": _ACCURACY.format(what="single-tool tasks"),
    "multi": _ACCURACY.format(what="multi-tool tasks (parallel, sequential and mixed)"),
    "clarify": _ACCURACY.format(what="clarify tasks (the model must ask for missing information)"),
    "chat": _ACCURACY.format(what="chat tasks (the model must answer without a tool)"),
    "order1": _ACCURACY.format(what="tasks in position 1 of their session"),
    "order2": _ACCURACY.format(what="tasks in position 2 of their session"),
    "order3": _ACCURACY.format(what="tasks in position 3 of their session"),
    "order4": _ACCURACY.format(what="tasks in position 4 of their session"),
    "task_acc": _ACCURACY.format(what="all tasks") + " (a task is correct when each of its steps has the right "
                "call names and arguments, or the right reply without a call)",
    "session_acc": "% of sessions whose every task is judged correct",
    # Table 7
    "acc_multi_P": _ACCURACY.format(what="parallel multi-tool tasks (P)"),
    "acc_multi_S": _ACCURACY.format(what="sequential multi-tool tasks (S)"),
    "acc_multi_SP": _ACCURACY.format(what="mixed multi-tool tasks (S+P)"),
    "acc_multi_overall": _ACCURACY.format(what="multi-tool tasks (P, S and S+P together)"),
    "ap_S": "AP over the sequential tasks (S); see AP.",
    "ap_SP": "AP over the mixed tasks (S+P); see AP.",
    "ap_overall": AP_RATE,
    "op_P": "OP over the parallel tasks (P); see OP.",
    "op_SP": "OP over the mixed tasks (S+P); see OP.",
    "op_overall": OP_RATE,
    # hidden intention (Figure 6)
    "First Turn": _ACCURACY.format(what="first tasks of a session"),
    "Partial Information": _ACCURACY.format(what="tasks whose user message leaves out what an earlier turn said"),
    "Coreferential Reference": _ACCURACY.format(what="tasks that refer back to something earlier (it, that one)"),
    "Long-Range Dependency": _ACCURACY.format(what="tasks that need information from several turns back"),
    "Subsequent Turn": _ACCURACY.format(what="tasks after the first of a session"),
    # transitions (Figure 7)
    **{f"t{n}": _ACCURACY.format(what=f"tasks with {n} task-type change(s) in the session up to them")
       for n in range(4)},
    **{f"n{n}": f"tasks with {n} task-type change(s) in the session up to them (a count)" for n in range(4)},
    # error categories
    "failed": "failed tasks (a count); the other columns are % of these",
    **{label: f"% of failed tasks whose first failure is {label} (docs/outputs-and-reports.md)" for label in LABELS},
    **{column: f"% of failed tasks labelled {' or '.join(labels)}" for column, labels in PAPER_COLUMNS.items()},
    # run health
    "tasks": "tasks scored",
    "steps": "model steps recorded (one request each)",
    "parse_failure_pct": "% of steps whose reply no parser rule could read (recorded and scored as errors)",
    "length_steps": "steps cut at the token limit (finish_reason length)",
    "length_in_reasoning": "of those, steps cut while still reasoning (no content, calls or parse errors)",
    "calls_in_reasoning": "steps with a tool call written inside the reasoning block",
    "format_deviations": "steps with tool calls written outside the model's tool-call format",
    "failed_requests": "steps whose request got no reply (a fault of the run, not the model's)",
    "failed_reasons": "why those requests failed",
    "prompt_tokens_per_task": "prompt tokens sent per task (mean)",
    "generated_tokens_per_task": "tokens generated per task (mean)",
    "latency_mean_s": "seconds from a step's request to its reply (mean)",
    "latency_p95_s": "the same, 95th percentile",
    "wall_s": "wall-clock seconds of the run's invocations together",
    "status": "how the run ended, as its manifest records it",
    # format deviations
    "calls": "tool calls written outside the format (not executed)",
    "fenced_json": "steps with a ``` block holding a JSON call",
    "bare_json": "steps with a JSON call in the text",
    # versions a score depends on (the manifest's `versions`)
    "engine": "what generated the completions (vllm, transformers, a server, or a replay of recorded ones)",
    "engine_version": "that engine's version as the run recorded it",
    "constrained": "whether decoding was constrained to the tool schema (vLLM's strict tool calling or "
                   "structured outputs), as the engine or server said it; unknown where a server does not say",
    "parser": "the tool-call parser that read the completions",
    "parser_implementation": "whose code that parser is: wtb_local's own, or the installed vLLM's (vllm:NAME)",
    "parser_version": "the parser's version: wtb_local's for its own parsers, vLLM's for vllm:NAME",
}


def definition(key: str) -> str | None:
    """The column's sentence; `format:<parser>` columns are another family's format."""
    if key.startswith("format:"):
        return f"steps with calls in the {key[7:]} parser's format, another family's"
    return COLUMN_DEFINITIONS.get(key)
