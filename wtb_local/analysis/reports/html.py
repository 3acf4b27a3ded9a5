"""One self-contained HTML file (nothing fetched when it opens): the report's tables, its plots as
inline PNGs, and a trajectory browser over every task of every detailed run.

The browser's index (one short row per task) is parsed at load; each session's details (conversation,
raw completions, parsed calls, gold candidates, argument checks, verdict) sit in their own
`<script type="application/json">` block, parsed only when one of its tasks is opened (browser.js).
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wtb_local.analysis.reports.runs import Run
from wtb_local.analysis.reports.sections import Section, format_value
from wtb_local.contract.resources import package_file

_TEXT_CELL = ' class="txt"'


def _json_block(element_id: str, value: Any) -> str:
    # "</" would end the script element early; "<!--" would open a comment in it.
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("</", "<\\/").replace("<!--", "<\\u0021--")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _steps_of(task: Any) -> dict[str, dict[str, Any]]:
    log = task.get("inference_log") if isinstance(task, dict) else None
    return {k: v for k, v in (log or {}).items() if k.startswith("step_") and isinstance(v, dict)}


def task_detail(scored: Any, recorded: Any, category: str | None) -> dict[str, Any]:
    """What the browser shows for one task: the scored steps, plus any step the scorer dropped (it
    deletes the step after an argument failure) from the result file."""
    if not isinstance(scored, dict):
        return {"error": f"session recorded as an error: {scored}"}
    scored_steps = _steps_of(scored)
    recorded_steps = _steps_of(recorded) or scored_steps
    steps, messages = [], []
    for key, step in recorded_steps.items():
        dropped = key not in scored_steps
        use = step if dropped else scored_steps[key]
        output = found if isinstance(found := use.get("inference_output"), dict) else {}
        inputs = given if isinstance(given := use.get("inference_input"), dict) else {}
        if isinstance(inputs.get("messages"), list):
            messages = inputs["messages"]
        entry: dict[str, Any] = {
            "label": output.get("current_action_name_label", "error"),
            "reasoning": output.get("reasoning_content"), "content": output.get("content"),
            "tool_calls": output.get("tool_calls"), "gold": use.get("inference_answer"),
        }
        for name, source in (("raw", "raw"), ("finish_reason", "finish_reason"), ("error_reason", "error_reason"),
                             ("parse_errors", "parse_errors"), ("format_deviation", "format_deviation"),
                             ("arguments_label", "current_action_arguments_label"),
                             ("check", "current_action_arguments_check_result")):
            if source in output:
                entry[name] = output[source]
        if dropped:
            entry["dropped"] = True
        steps.append(entry)
    begin = (scored.get("inference_log") or {}).get("begin_of_current_task")
    starts = [i for i, m in enumerate(messages) if begin is not None and m == begin]
    verdict = {k: scored.get(k) for k in ("label", "action_name_label", "action_arguments_label", "is_optimal")
               if k in scored}
    verdict["error_category"] = category
    # messages before this task's own user message are the gold history of the earlier tasks
    return {"verdict": verdict, "messages": messages, "history": starts[-1] if starts else 0, "steps": steps}


def _session_blocks(run_index: int, run: Run) -> tuple[list[list[Any]], list[str]]:
    from wtb_local.benchmark.evaluator.metrics import session_index

    recorded = {row.get("id"): row for row in run.result_rows or []}
    by_index = {session.index: session for session in run.sessions or []}
    records = {(t.session_id, t.task_idx): t for t in run.tasks}
    index_rows: list[list[Any]] = []
    blocks: list[str] = []
    for row in run.score_rows or []:
        session = by_index[session_index(row["id"])]
        results = row.get("results")
        recorded_tasks = recorded.get(row["id"], {}).get("result")
        details = []
        solved = all(records[(session.id, i)].correct for i in range(len(session.english_tasks)))
        for i in range(len(session.english_tasks)):
            record = records[(session.id, i)]
            scored = results[i] if isinstance(results, list) and i < len(results) else results
            mine = recorded_tasks[i] if isinstance(recorded_tasks, list) and i < len(recorded_tasks) else None
            details.append(task_detail(scored, mine, record.category))
            index_rows.append([run_index, session.id, i, record.task_type,
                               "correct" if record.correct else "error", record.category, record.subtype,
                               record.transitions, "correct" if solved else "error"])
        blocks.append(_json_block(f"wtb-s-{run_index}-{session.id}",
                                  {"tools": session.english_tools, "tasks": details}))
    return index_rows, blocks


def _table(section: Section) -> str:
    """A table in its own scrolling box (a wide one scrolls there, not the page), every header with its
    definition as a hover title, and a legend below that says the same in words."""
    defined = [(h, section.definition(k)) for k, h in section.columns]
    # a column holding text is left-aligned, header included, so the header sits over its cells
    text_columns = [any(isinstance(row.get(k), str) for row in section.rows) for k, _ in section.columns]
    head = f'<th>{html.escape(section.label_header)}</th>' + "".join(
        f'<th{_TEXT_CELL if is_text else ""}{f" title={_attr(text)}" if text else ""}>{html.escape(h)}</th>'
        for (h, text), is_text in zip(defined, text_columns, strict=True))
    body = []
    for row in section.rows:
        kind = row.get("kind", "ours")
        # a text column's cells (failure reasons, notes, versions) wrap and sit left, its empty ones too, under
        # their header; numbers stay on one line
        cells = "".join(f"<td{_TEXT_CELL if is_text else ''}>"
                        f"{html.escape(format_value(row.get(k), kind, section.percent))}</td>"
                        for (k, _), is_text in zip(section.columns, text_columns, strict=True))
        body.append(f'<tr class="{kind}"><th>{html.escape(row["label"])}</th>{cells}</tr>')
    legend = "".join(f"<dt>{html.escape(h)}</dt><dd>{html.escape(text)}</dd>" for h, text in defined if text)
    legend = f'<dl class="legend">{legend}</dl>' if legend else ""
    note = f'<p class="note">{html.escape(section.note)}</p>' if section.note else ""
    return (f'<section id="sec-{section.key}"><h2>{html.escape(section.title)}</h2>'
            f'<div class="scroll"><table class="t"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
            f"</table></div>{legend}{note}</section>")


def _attr(text: str) -> str:
    return '"' + html.escape(text, quote=True) + '"'


# The trajectory browser's columns and what they mean. Tasks are numbered from 0, as the result files'
# task_idx, `explain` and `parsers compare` number them (session/task/step).
BROWSER_COLUMNS = (
    ("model", "the run (its label in the tables above)"),
    ("session", "the session id in the dataset"),
    ("task", "the task's position in its session, from 0 (the result files' task_idx; Table 6's order1 is task 0)"),
    ("type", "the task type: single-tool, multi-tool (parallel, sequential, mixed), clarify or chat"),
    ("subtype", "the hidden-intention subtype of the turn (first turn, partial info, coreference, long-range)"),
    ("transitions", "task-type changes in the session up to this task"),
    ("verdict", "correct: each step's call names and arguments right; error: otherwise"),
    ("error category", "the first failure of a failed task (docs/outputs-and-reports.md, 'Error categories')"),
)


def _browser_head() -> str:
    return "".join(f"<th title={_attr(text)}>{html.escape(name)}</th>" for name, text in BROWSER_COLUMNS)


def _browser_legend() -> str:
    return "".join(f"<dt>{html.escape(name)}</dt><dd>{html.escape(text)}</dd>" for name, text in BROWSER_COLUMNS)


def report_html(sections: Sequence[Section], runs: Sequence[Run], plots: Sequence[Path] = (),
                notes: Sequence[str] = (), title: str = "WildToolBench report") -> str:
    detailed = [run for run in runs if run.detailed]
    index_rows: list[list[Any]] = []
    blocks: list[str] = []
    for i, run in enumerate(detailed):
        rows, session_blocks = _session_blocks(i, run)
        index_rows += rows
        blocks += session_blocks
    images = "".join(
        f'<figure><img alt="{html.escape(p.stem)}" src="data:image/png;base64,'
        f'{base64.b64encode(p.read_bytes()).decode("ascii")}"><figcaption>{html.escape(p.stem)}</figcaption>'
        "</figure>" for p in plots)
    css = package_file("analysis", "reports", "browser.css").read_text(encoding="utf-8")
    script = package_file("analysis", "reports", "browser.js").read_text(encoding="utf-8")
    note_items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    browser = "" if not detailed else f"""
<section id="browser"><h2>Trajectory browser</h2>
<div class="filters">
<label>model <select id="f-model"><option value="">all</option></select></label>
<label>verdict <select id="f-verdict"><option value="">all</option><option value="correct">correct</option>
<option value="error">error</option></select></label>
<label>session verdict <select id="f-session-verdict"><option value="">all</option>
<option value="correct">every task correct</option><option value="error">a task failed</option></select></label>
<label>task type <select id="f-type"><option value="">all</option></select></label>
<label>error category <select id="f-category"><option value="">all</option></select></label>
<label>session <input id="f-session" type="search" placeholder="wild_tool_bench_"></label>
<span><b id="b-count">0</b> tasks</span>
<span class="pager"><button id="b-prev" type="button">previous</button> <span id="b-page"></span>
<button id="b-next" type="button">next</button></span>
</div>
<div class="scroll"><table class="t rows"><thead><tr>{_browser_head()}</tr></thead><tbody id="b-rows"></tbody>
</table></div><dl class="legend">{_browser_legend()}</dl>
<div id="b-detail"><p class="note">Click a task to see its conversation, raw completions, parsed calls, gold
candidates and argument checks.</p></div>
</section>
{_json_block("wtb-index", {"runs": [r.label for r in detailed], "tasks": index_rows})}
{"".join(blocks)}
<script>{script}</script>"""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<link rel="icon" href="data:,"><style>{css}</style></head>
<body><h1>{html.escape(title)}</h1><ul class="notes">{note_items}</ul>
{"".join(_table(s) for s in sections)}
{f'<section id="plots"><h2>Plots</h2>{images}</section>' if images else ""}
{browser}
</body></html>
"""
