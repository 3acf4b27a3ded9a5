"""The report's fixed columns, one record each: its key (the CSV/JSON name), its header (the printed one),
its definition (the legend under its table and the header's hover title), where its value comes from, and
whether the exports carry it (MLflow metrics, the Inspect log's results, the leaderboard row). Every list
of columns (the tables, the CSVs, `summary.json`, the glossary, the exports) is read from here, so a column
is added, renamed or explained in one place. Columns that depend on the data (error labels, format
deviation kinds, transitions, the paper's Table 8 layout) are built by their sections; their sentences are
in glossary.py. The AP/OP sentences follow docs/evaluation.md §6 and docs/paper-protocol.md."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class Column:
    """One report column. `source` says where its value is read: a metric file's (section, bucket, value)
    for the tables and subtypes, `("health", key)` for run_health's figures (analysis/reports/health.py),
    `("versions", part, field)` for the manifest's `versions`."""

    key: str
    header: str
    section: str
    definition: str
    source: tuple[str, ...]
    exported: bool = False


def _table(section: str, rows: tuple[tuple[str, str, str, tuple[str, str, str]], ...]) -> list[Column]:
    return [Column(key, header, section, text, source, exported=True) for key, header, text, source in rows]


REPORT_COLUMNS: tuple[Column, ...] = (
    *_table("table6", (
        ("single", "single", _ACCURACY.format(what="single-tool tasks"),
         ("task_type_info", "Single-Tool", "accuracy")),
        ("multi", "multi", _ACCURACY.format(what="multi-tool tasks (parallel, sequential and mixed)"),
         ("task_type_info", "Multi-Tool", "accuracy")),
        ("clarify", "clarify", _ACCURACY.format(what="clarify tasks (the model must ask for missing information)"),
         ("task_type_info", "Clarify", "accuracy")),
        ("chat", "chat", _ACCURACY.format(what="chat tasks (the model must answer without a tool)"),
         ("task_type_info", "Chat", "accuracy")),
        *((f"order{n}", f"order{n}", _ACCURACY.format(what=f"tasks in position {n} of their session"),
           ("layer_info", str(n - 1), "accuracy")) for n in (1, 2, 3, 4)),
        ("task_acc", "task", _ACCURACY.format(what="all tasks") + " (a task is correct when each of its steps has "
         "the right call names and arguments, or the right reply without a call)", ("total_info", "task", "accuracy")),
        ("session_acc", "session", "% of sessions whose every task is judged correct",
         ("total_info", "session", "accuracy")),
    )),
    *_table("table7", (
        ("acc_multi_P", "P", _ACCURACY.format(what="parallel multi-tool tasks (P)"),
         ("task_type_info", "Parallel Multi-Tool", "accuracy")),
        ("acc_multi_S", "S", _ACCURACY.format(what="sequential multi-tool tasks (S)"),
         ("task_type_info", "Sequential Multi-Tool", "accuracy")),
        ("acc_multi_SP", "S+P", _ACCURACY.format(what="mixed multi-tool tasks (S+P)"),
         ("task_type_info", "Mixed Multi-Tool", "accuracy")),
        ("acc_multi_overall", "multi", _ACCURACY.format(what="multi-tool tasks (P, S and S+P together)"),
         ("task_type_info", "Multi-Tool", "accuracy")),
        ("ap_S", "AP S", "AP over the sequential tasks (S); see AP.",
         ("progress_info", "Sequential Multi-Tool", "rate")),
        ("ap_SP", "AP S+P", "AP over the mixed tasks (S+P); see AP.", ("progress_info", "Mixed Multi-Tool", "rate")),
        ("ap_overall", "AP", AP_RATE, ("progress_info", "Total", "rate")),
        ("op_P", "OP P", "OP over the parallel tasks (P); see OP.",
         ("optimal_info", "Parallel Multi-Tool", "accuracy")),
        ("op_SP", "OP S+P", "OP over the mixed tasks (S+P); see OP.", ("optimal_info", "Mixed Multi-Tool", "accuracy")),
        ("op_overall", "OP", OP_RATE, ("optimal_info", "Total", "accuracy")),
    )),
    # hidden intention (Figure 6): a plot only in the paper, not exported
    *(Column(key, header, "subtypes", _ACCURACY.format(what=what), ("turn_subtype_info", key, "accuracy"))
      for key, header, what in (
          ("First Turn", "first turn", "first tasks of a session"),
          ("Partial Information", "partial info", "tasks whose user message leaves out what an earlier turn said"),
          ("Coreferential Reference", "coreference", "tasks that refer back to something earlier (it, that one)"),
          ("Long-Range Dependency", "long-range", "tasks that need information from several turns back"),
          ("Subsequent Turn", "subsequent", "tasks after the first of a session"))),
    # run health: the numeric figures are MLflow metrics (`health.<key>`)
    *(Column(key, header, "health", text, ("health", key), exported=exported)
      for key, header, text, exported in (
          ("tasks", "tasks", "tasks scored", True),
          ("steps", "steps", "model steps recorded (one request each)", True),
          ("parse_failure_pct", "parse failures %",
           "% of steps whose reply no parser rule could read (recorded and scored as errors)", True),
          ("length_steps", "ended by length", "steps cut at the token limit (finish_reason length)", True),
          ("length_in_reasoning", "…inside reasoning",
           "of those, steps cut while still reasoning (no content, calls or parse errors)", True),
          ("calls_in_reasoning", "calls in reasoning", "steps with a tool call written inside the reasoning block",
           True),
          ("format_deviations", "format deviations",
           "steps with tool calls written outside the model's tool-call format", True),
          ("failed_requests", "failed requests", ("steps whose request got no reply (a fault of the run, not the "
           "model's)"), True),
          ("failed_reasons", "failure reasons", "why those requests failed", False),
          ("prompt_tokens_per_task", "prompt tok/task", "prompt tokens sent per task (mean)", True),
          ("generated_tokens_per_task", "generated tok/task", "tokens generated per task (mean)", True),
          ("latency_mean_s", "latency/step s", "seconds from a step's request to its reply (mean)", True),
          ("latency_p95_s", "p95 s", "the same, 95th percentile", True),
          ("wall_s", "wall s", "wall-clock seconds of the run's invocations together", True),
          ("status", "status", "how the run ended, as its manifest records it", False))),
    # versions a score depends on (the manifest's `versions`): MLflow tags carry the package versions instead
    *(Column(key, header, "versions", text, ("versions", *where))
      for key, header, text, where in (
          ("engine", "engine", ("what generated the completions (vllm, transformers, a server, or a replay of "
           "recorded ones)"), ("engine", "name")),
          ("engine_version", "engine version", "that engine's version as the run recorded it", ("engine", "version")),
          ("constrained", "constrained decoding", ("whether decoding was constrained to the tool schema (vLLM's "
           "strict tool calling or structured outputs), as the engine or server said it; unknown where a server "
           "does not say"), ("engine", "constrained_decoding")),
          ("parser", "parser", "the tool-call parser that read the completions", ("parser", "name")),
          ("parser_implementation", "parser implementation",
           "whose code that parser is: wtb_local's own, or the installed vLLM's (vllm:NAME)",
           ("parser", "implementation")),
          ("parser_version", "parser version",
           "the parser's version: wtb_local's for its own parsers, vLLM's for vllm:NAME", ("parser", "version")))),
)


def columns_of(section: str) -> tuple[Column, ...]:
    """The section's columns, in their printed order."""
    return tuple(column for column in REPORT_COLUMNS if column.section == section)


def keys_of(section: str) -> tuple[str, ...]:
    return tuple(column.key for column in columns_of(section))


def headers_of(section: str) -> tuple[str, ...]:
    return tuple(column.header for column in columns_of(section))


def pairs_of(section: str) -> list[tuple[str, str]]:
    """(key, header) per column: what a report `Section` lists."""
    return [(column.key, column.header) for column in columns_of(section)]


__all__ = ["AP_RATE", "OP_RATE", "REPORT_COLUMNS", "Column", "columns_of", "headers_of", "keys_of", "pairs_of"]
