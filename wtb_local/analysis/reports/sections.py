"""The report's tables as data: one `Section` per table (columns + rows), built from loaded runs, and
rendered by every output format (terminal, Markdown, CSV, JSON, HTML) the same way.

Each builder returns rows as dicts `{"label", "kind", <column>: value}`; `kind` is `ours`, `paper` or
`diff` (ours minus the paper's). A fixed column is a record in analysis/reports/columns.py (key, header,
definition, source, exported); to add one, add its record there and set it on the rows.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from wtb_local.analysis.reports.columns import columns_of, pairs_of
from wtb_local.analysis.reports.glossary import definition
from wtb_local.analysis.reports.health import HEALTH_COLUMNS, format_deviation_counts, run_health
from wtb_local.analysis.reports.paper import paper_name, paper_rows
from wtb_local.analysis.reports.runs import Run
from wtb_local.analysis.reports.table import COLUMNS, HEADERS, UNCERTAINTY_NOTE, metric_values, scored_errors
from wtb_local.benchmark.scoring.taxonomy import LABELS, PAPER_COLUMNS, PAPER_HEADERS

SUBTYPE_COLUMNS = tuple(pairs_of("subtypes"))  # analysis/reports/columns.py
TRANSITIONS = (0, 1, 2, 3)
PAPER_NOTE_TABLE8 = (
    "Indicative only: the benchmark's released checker is stricter than the one behind the paper's numbers "
    "(paper-harness §3.1), so parameter errors move between columns and some action errors become "
    "parameter errors.")


@dataclass
class Section:
    key: str
    title: str
    columns: list[tuple[str, str]]
    rows: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""
    percent: bool = True  # values are percentages (two decimals; diffs signed)
    label_header: str = "model"  # the header of the rows' label column
    # column key -> what it means, where the glossary (analysis/reports/glossary.py) has no sentence for it
    definitions: dict[str, str] = field(default_factory=dict)

    def definition(self, key: str) -> str | None:
        return self.definitions.get(key) or definition(key)


def _paper(run: Run, table: int) -> tuple[str, dict[str, float]] | None:
    from wtb_local.analysis.reports.present import row_thinking  # deferred: start-up

    # the mode every command picks the row by (recorded, else the template's default)
    thinking = row_thinking(run.facts)[0] if run.facts is not None else run.thinking
    name = paper_name(run.model_id, thinking) or paper_name(run.model_name, thinking)
    printed = paper_rows(table).get(name) if name else None
    if printed is None:
        return None
    return name, {k: float(v) for k, v in printed.items() if k != "group"}  # type: ignore[return-value]


def _with_paper(rows: list[dict[str, Any]], run: Run, ours: dict[str, float], table: int,
                columns: Sequence[str], paper: bool, errors: dict[str, Any] | None = None) -> None:
    rows.append({"label": run.label, "kind": "ours", **ours})
    found = _paper(run, table) if paper else None
    if found is not None:  # right after ours: the plots pair them so
        name, values = found
        rows.append({"label": f"paper: {name}", "kind": "paper", **{c: values[c] for c in columns}})
        rows.append({"label": f"diff: {run.label}", "kind": "diff",
                     **{c: ours[c] - values[c] for c in columns}})
    if errors:  # the row's uncertainty (docs/reports.md "Uncertainty"): se and 95% interval in %, n a count
        for kind, text, part in UNCERTAINTY_ROWS:
            rows.append({"label": f"{run.label}: {text}", "kind": kind,
                         **{c: _part(errors[c], part) for c in columns}})


UNCERTAINTY_ROWS = (("se", "± se", "se"), ("low", "95% low", "low"), ("high", "95% high", "high"),
                    ("n", "n", "n"))


def _part(estimate: Any, part: str) -> float | int:
    if part == "n":
        return int(estimate.n) if float(estimate.n).is_integer() else float(estimate.n)
    return 100.0 * float(getattr(estimate, part))


def table_section(runs: Sequence[Run], table: int, paper: bool = True) -> Section:
    title = ("Table 6: accuracy by task type and task order, %" if table == 6
             else "Table 7: multi-tool accuracy (P, S, S+P), AP and OP rates, %")
    section = Section(f"table{table}", title, list(zip(COLUMNS[table], HEADERS[table], strict=True)))
    for run in runs:
        errors = scored_errors(run.score_rows, run.sessions, run.metric, run.protocol[1]) \
            if run.summary is None else {}
        _with_paper(section.rows, run, metric_values(run.metric, table), table, COLUMNS[table], paper,
                    errors.get(table))
        if errors:
            section.note = UNCERTAINTY_NOTE
    return section


def subtype_section(runs: Sequence[Run]) -> Section:
    section = Section("subtypes", "Hidden intention (the paper's Figure 6): accuracy by turn subtype, %",
                      list(SUBTYPE_COLUMNS),
                      note="The paper gives Figure 6 as a plot only, so there is no paper row.")
    for run in runs:
        info = run.metric.get("turn_subtype_info", {})
        values = {}
        for key, _ in SUBTYPE_COLUMNS:
            bucket = info.get(key) if isinstance(info, dict) else None
            total = bucket.get("total_count") if isinstance(bucket, dict) else 0
            values[key] = 100.0 * float(bucket.get("accuracy", 0.0)) if isinstance(bucket, dict) and total else math.nan
        section.rows.append({"label": run.label, "kind": "ours", **values})
    return section


def transition_section(runs: Sequence[Run]) -> Section:
    columns = [(f"t{n}", f"{n} transition{'' if n == 1 else 's'}") for n in TRANSITIONS] + \
        [(f"n{n}", f"tasks ({n})") for n in TRANSITIONS]
    section = Section("transitions", "Instruction transitions (the paper's Figure 7): accuracy by the number "
                      "of task-type changes in the session up to the task, %", columns,
                      note="A transition is a change of task type (single / multi / clarify / chat) between "
                      "consecutive tasks; the task counts are plain numbers. Plot only in the paper.")
    for run in _detailed(runs):
        row: dict[str, Any] = {"label": run.label, "kind": "ours"}
        for n in TRANSITIONS:
            tasks = [t for t in run.tasks if t.transitions == n]
            row[f"t{n}"] = 100.0 * sum(t.correct for t in tasks) / len(tasks) if tasks else math.nan
            row[f"n{n}"] = len(tasks)
        section.rows.append(row)
    return section


def category_counts(run: Run) -> Counter[str]:
    return Counter(t.category for t in run.tasks if t.category is not None)


def error_section(runs: Sequence[Run]) -> Section:
    columns = [("failed", "failed tasks"), *((label, label) for label in LABELS)]
    section = Section("errors", "Error categories, every label: % of failed tasks", columns,
                      note="One category per failed task (docs/outputs-and-reports.md, 'Error categories'); Run Error = the "
                      "request was never served, not the model's fault.")
    for run in _detailed(runs):
        counts = category_counts(run)
        failed = sum(counts.values())
        row: dict[str, Any] = {"label": run.label, "kind": "ours", "failed": failed}
        for label in LABELS:
            row[label] = 100.0 * counts[label] / failed if failed else math.nan
        section.rows.append(row)
    return section


def paper_error_section(runs: Sequence[Run], paper: bool = True) -> Section:
    columns = list(zip(PAPER_COLUMNS, PAPER_HEADERS, strict=True))
    section = Section("table8", "Table 8 layout: error distribution, % of failed tasks", columns,
                      note=PAPER_NOTE_TABLE8 + " Wrong Name and Missing Info share a column; a missing "
                      "parameter counts as a value error; run errors have no column.")
    for run in _detailed(runs):
        counts = category_counts(run)
        failed = sum(counts.values())
        ours = {column: (100.0 * sum(counts[label] for label in labels) / failed if failed else math.nan)
                for column, labels in PAPER_COLUMNS.items()}
        _with_paper(section.rows, run, ours, 8, list(PAPER_COLUMNS), paper)
    return section


def health_section(runs: Sequence[Run]) -> Section:
    section = Section("health", "Run health: is a low score the model or the run?", list(HEALTH_COLUMNS),
                      note="n/a: the files do not record it (the benchmark harness keeps no raw "
                      "completions). Ended by length: finish_reason 'length'; inside reasoning: with "
                      "reasoning but no content, calls or parse errors. Calls in reasoning: steps with a tool "
                      "call written inside the reasoning block; format deviations: steps with tool calls "
                      "written outside the model's tool-call format (docs/parser-policies.md).", percent=False)
    for run in runs:
        if run.score_rows is None and run.result_rows is None:
            continue
        section.rows.append({"label": run.label, "kind": "ours",
                             **run_health(run.result_rows, run.score_rows, run.manifest)})
    return section


def format_deviation_section(runs: Sequence[Run]) -> Section:
    """Steps with tool calls written in a foreign wrapper, per kind (docs/parser-policies.md §3); rows only
    when some run has any, then for every run whose files record raw completions."""
    counted = [(run, counts) for run in runs
               if (counts := format_deviation_counts(run.result_rows)) is not None]
    kinds = sorted({kind for _, counts in counted for kind in counts})
    section = Section("format_deviations", "Format deviations: steps with tool calls outside the model's format",
                      [("steps", "steps"), ("calls", "calls"), *((kind, kind) for kind in kinds)],
                      note="Steps per kind: fenced_json (a ``` block holding a JSON call), bare_json (a JSON "
                      "call in the text), format:<parser> (another family's format, as that parser reads "
                      "it); calls: the calls written so, not executed (docs/parser-policies.md §3).",
                      percent=False, definitions={"steps": "steps with tool calls written outside the format"})
    if not kinds:
        return section
    for run, counts in counted:
        section.rows.append({"label": run.label, "kind": "ours",
                             "steps": sum(entry["steps"] for entry in counts.values()),
                             "calls": sum(entry["calls"] for entry in counts.values()),
                             **{kind: counts.get(kind, {}).get("steps", 0) for kind in kinds}})
    return section


VERSION_COLUMNS = tuple(pairs_of("versions"))


def versions_section(runs: Sequence[Run]) -> Section:
    """What a score depends on besides the model: the engine and its version, whether decoding was
    constrained, the parser, whose code it is and its version (the manifest's `versions`); rows only for
    runs whose manifest records them."""
    section = Section("versions", "Versions a score depends on", list(VERSION_COLUMNS),
                      note="From each run's manifest (`versions`); n/a: not recorded. A score moves with the "
                      "parser's implementation and version: vllm:NAME is the installed vLLM's own parser "
                      "(docs/parsers-and-templates.md, \"vLLM's own parsers\").", percent=False,
                      label_header="run")
    for run in runs:
        versions = run.manifest.versions if run.manifest is not None else None
        if not versions:
            continue
        row: dict[str, Any] = {"label": run.label, "kind": "ours"}
        for column in columns_of("versions"):
            _, part, name = column.source
            row[column.key] = getattr(getattr(versions, part), name)
        section.rows.append(row)
    return section


def _detailed(runs: Sequence[Run]) -> list[Run]:
    return [run for run in runs if run.detailed]


def build_sections(runs: Sequence[Run], paper: bool = True) -> list[Section]:
    """Every table of the report, in reading order; sections with no rows are left out."""
    sections = [table_section(runs, 6, paper), table_section(runs, 7, paper), subtype_section(runs),
                transition_section(runs), paper_error_section(runs, paper), error_section(runs),
                health_section(runs), format_deviation_section(runs), versions_section(runs)]
    return [section for section in sections if section.rows]


def format_value(value: Any, kind: str = "ours", percent: bool = True) -> str:
    """A cell as text: percentages with two decimals (diffs signed), `-` for an empty bucket, `n/a` for
    a figure the files do not record."""
    if value is None:
        return "n/a"
    if isinstance(value, bool | str | int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if not percent:
            return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"
        return f"{value:+.2f}" if kind == "diff" else f"{value:.2f}"
    return str(value)
