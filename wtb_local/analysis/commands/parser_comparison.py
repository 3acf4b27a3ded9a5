"""Comparing tool-call parsers on one run's recorded raw completions (`parsers compare RUN_DIR`).

Two views, each parser against the first one named (the baseline):
- the recorded completions: every step the run recorded a raw completion for is parsed by each parser
  (with the tools that step offered and its finish reason): calls extracted, parse failures (errors and no
  call), partial parses (errors but calls kept), format deviations (steps whose calls this parser left in
  a foreign wrapper, per kind: docs/parser-policies.md §3), and disagreements with the baseline: another list of
  calls (names and arguments compared as parsed JSON), a failure where the baseline parsed, or, where
  both parsed, other content (whitespace collapsed). Content counts because a parser reading a foreign format leniently can
  take the same calls and leave the other format's markup (`<tool_call>\n</tool_call>`) as the reply's
  text (docs/parser-policies.md §2);
- the task verdicts: the run is replayed through the replay backend with each parser, then judged. A parser
  that accepts a different reply leads the conversation to steps the run never recorded: such a task is
  "not comparable" (no completion exists to judge), not a failure, and is left out of the accuracy.

Each parser gets the recorded options that still apply (`contract.recorded.replay_parser`, as a replay run
does): `thinking` (the prompt pre-filled the reasoning tag, once or per step) describes the prompt, not
the parser, so it applies to every parser.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from wtb_local.contract.errors import RunError
from wtb_local.contract.manifest import Manifest
from wtb_local.contract.recorded import (
    ReplayError,
    find_result_file,
    recorded_manifest,
    recorded_parser,
    replay_parser,
)
from wtb_local.contract.rows import RESULT_KEYS, StepView, iter_steps, read_rows, read_sessions
from wtb_local.formats.parsers.prefill import STEP_FIELD, step_parser

UNRECORDED = "no recorded completion for "
_EXAMPLES = 3
_RAW_SHOWN = 240


class ParserStats(TypedDict):
    """One parser's counts over the recorded completions, as the report writes them (a dict in JSON)."""
    steps: int
    calls: int
    steps_with_calls: int
    parse_failures: int
    partial_parses: int
    format_deviations: dict[str, int]  # deviation kind -> steps
    disagreements: int
    examples: list[dict[str, Any]]


def _normalized_calls(result: Any) -> list[tuple[str, str]]:
    calls = []
    for call in result.tool_calls:
        try:
            arguments: Any = json.loads(call.arguments)
        except ValueError:
            arguments = call.arguments
        calls.append((call.name, json.dumps(arguments, sort_keys=True, ensure_ascii=False)))
    return calls


def _parsed_view(result: Any) -> dict[str, Any]:
    return {"calls": [{"name": name, "arguments": json.loads(args)}
                      for name, args in _normalized_calls(result)],
            "content": result.content, "errors": list(result.errors)}


def _content(result: Any) -> str:
    return " ".join((result.content or "").split())


def differences(result: Any, reference: Any) -> list[str]:
    """What differs between two parses of one completion: `calls`, `failure`, `content` (in that order).
    Content is compared only where both parses are replies (a failed parse makes the step an error)."""
    failed = bool(result.errors) and not result.tool_calls
    reference_failed = bool(reference.errors) and not reference.tool_calls
    found = [("calls", _normalized_calls(result) != _normalized_calls(reference)),
             ("failure", failed != reference_failed),
             ("content", not (failed or reference_failed) and _content(result) != _content(reference))]
    return [name for name, differs in found if differs]


def _recorded_steps(result_file: Path, notes: list[str] | None = None) -> list[tuple[str, StepView]]:
    """(request id, the step as recorded) of every step with a raw completion, in order;
    `notes` gets the note of an incomplete last line left out. The rows are read by the rule for damaged
    records and as read-only views (contract/rows.py): a crashed session (its error string) has no steps;
    a task or step that is not an object is refused in one line (RowError)."""
    steps = []
    for session, task, step in iter_steps(read_sessions(result_file, notes, RESULT_KEYS)):
        if step.raw is None or step.finish_reason == "error":
            continue
        steps.append((f"{session.id}/{task.task_idx}/{step.number}", step))
    return steps


def _check_ids(result_file: Path, dataset: str) -> None:
    """Refuse a recorded row whose session is not in the run's dataset, in one line as every reader does
    (docs/files.md, "Damaged records"); a replay would leave it out silently."""
    from wtb_local.benchmark.dataset import read_dataset, resolve_dataset  # deferred: start-up

    sessions, _warnings = read_dataset(resolve_dataset(dataset, quiet=True))
    known = {session.id for session in sessions}
    for line, row in read_rows(result_file, keys=RESULT_KEYS):
        if row["id"] not in known:
            raise RunError(f"{result_file}:{line}: id: {row['id']} is not in the dataset ({len(sessions)} sessions)")


def compare_completions(steps: list[tuple[str, StepView]], parsers: list[Any]) -> dict[str, ParserStats]:
    from wtb_local.formats.parsers import parse_completion

    baseline = parsers[0].name
    stats: dict[str, ParserStats] = {
        p.name: {"steps": 0, "calls": 0, "steps_with_calls": 0, "parse_failures": 0, "partial_parses": 0,
                 "format_deviations": {}, "disagreements": 0, "examples": []} for p in parsers}
    for request, step in steps:
        raw = step.raw or ""
        parsed = {p.name: parse_completion(step_parser(p, step.output.get(STEP_FIELD)), raw, tools=step.tools,
                                           finish_reason=step.finish_reason)
                  for p in parsers}
        reference = parsed[baseline]
        for name, result in parsed.items():
            entry = stats[name]
            entry["steps"] += 1
            entry["calls"] += len(result.tool_calls)
            entry["steps_with_calls"] += bool(result.tool_calls)
            entry["parse_failures"] += bool(result.errors) and not result.tool_calls
            entry["partial_parses"] += bool(result.errors) and bool(result.tool_calls)
            if result.format_deviation is not None:  # calls this parser left in a foreign wrapper (§3)
                kinds = entry["format_deviations"]
                kinds[result.format_deviation.kind] = kinds.get(result.format_deviation.kind, 0) + 1
            differs = differences(result, reference) if name != baseline else []
            if differs:
                entry["disagreements"] += 1
                if len(entry["examples"]) < _EXAMPLES:
                    entry["examples"].append({"request": request, "raw": raw[:_RAW_SHOWN], "differs": differs,
                                              baseline: _parsed_view(reference), name: _parsed_view(result)})
    for entry in stats.values():
        entry["format_deviations"] = dict(sorted(entry["format_deviations"].items()))
    return stats


def _task_verdicts(score_rows: list[dict[str, Any]], result_rows: list[dict[str, Any]]) -> dict[str, str]:
    """`session/task` -> correct | error | not comparable."""
    unrecorded = set()
    for row in result_rows:
        for position, task in enumerate(row.get("result") or []):
            log = task.get("inference_log") or {}
            for key, entry in log.items():
                output = entry.get("inference_output") if key.startswith("step_") and isinstance(entry, dict) else None
                if isinstance(output, dict) and str(output.get("error_reason") or "").startswith(UNRECORDED):
                    unrecorded.add(f"{row['id']}/{log.get('task_idx', position)}")
    verdicts = {}
    for row in score_rows:
        for position, task in enumerate(row.get("results") or []):
            key = f"{row['id']}/{(task.get('inference_log') or {}).get('task_idx', position)}"
            verdicts[key] = "not comparable" if key in unrecorded else str(task.get("label"))
    return verdicts


def _replay(replay: Callable[..., Any], result_file: Path, manifest: Manifest, parser: str,
            dataset: str, out: Path) -> dict[str, str]:
    # the replay keeps the recorded options that still apply to `parser` (contract/recorded.py, replay_parser)
    outcome = replay(result_file, parser=parser, dataset=dataset, out=out, model=manifest.config.model,
                     model_name=manifest.config.model_name or result_file.parent.name)
    return _task_verdicts(outcome.score_rows, outcome.result_rows)


def _tokenizer(name: str, manifest: Manifest) -> Any:
    """The recorded run's tokenizer, for vLLM's own parsers (formats/parsers/vllm_native.py); None for ours."""
    from wtb_local.formats.parsers.vllm_native import is_vllm_parser, load_tokenizer  # deferred: start-up

    if not is_vllm_parser(name):
        return None
    config, settings = manifest.config, manifest.settings
    trust = config.trust_remote_code if config.trust_remote_code is not None else settings.trust_remote_code
    return load_tokenizer(config.model, revision=config.revision or settings.revision, trust_remote_code=bool(trust))


def compare_parsers(run_dir: str | Path, parser_names: list[str], *, replay: Callable[..., Any],
                    dataset: str | None = None, keep: str | Path | None = None) -> dict[str, Any]:
    """The comparison as a JSON-ready dict. `replay`: runs a replay of the recorded completions through one
    parser and returns its outcome (`runner.job.replay_run`, which `parsers compare` passes). `keep`: write
    each parser's replayed run under keep/<parser>."""
    from wtb_local.formats.parsers import get_parser

    if not parser_names:
        raise RunError("--parsers: name at least one parser (see `parsers list`)")
    try:
        result_file = find_result_file(run_dir)
    except ReplayError as exc:
        raise RunError(str(exc)) from None
    try:
        manifest = recorded_manifest(result_file) or Manifest()
        recorded, options = recorded_parser(result_file)
    except ReplayError as exc:
        raise RunError(str(exc)) from None
    chosen = {name: replay_parser(result_file, name)[1] for name in parser_names}  # as `run --backend replay`
    try:
        parsers = [get_parser(name, tokenizer=_tokenizer(name, manifest), **chosen[name]) for name in parser_names]
    except ValueError as exc:
        raise RunError(f"--parsers: {exc}") from None
    dataset = dataset or manifest.dataset_path
    if not dataset:
        raise RunError(f"{run_dir}: its manifest names no dataset file; pass --dataset PATH")
    notes: list[str] = []  # an incomplete last line left by an interrupted run, dropped as `run` does
    _check_ids(result_file, dataset)
    steps = _recorded_steps(result_file, notes)
    if not steps:
        raise RunError(f"{result_file}: no step records a raw completion to compare parsers on")
    completions = compare_completions(steps, parsers)

    verdicts: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="wtb-compare-") as scratch:
        root = Path(keep) if keep else Path(scratch)
        for name in parser_names:
            verdicts[name] = _replay(replay, result_file, manifest, name, dataset, root / name)
    baseline = parser_names[0]
    tasks = {}
    for name in parser_names:
        mine, base = verdicts[name], verdicts[baseline]
        comparable = [k for k, v in mine.items() if v != "not comparable"]
        correct = sum(1 for k in comparable if mine[k] == "correct")
        differing = sorted(k for k in comparable if base.get(k) not in (None, "not comparable") and base[k] != mine[k])
        tasks[name] = {"tasks": len(mine), "correct": correct, "errors": len(comparable) - correct,
                       "not_comparable": len(mine) - len(comparable),
                       # over every task, as the replay run with this parser and `explain` count it (a
                       # task that reaches an unrecorded step is a step error there)
                       "accuracy": round(100 * correct / len(mine), 2) if mine else None,
                       "accuracy_comparable": round(100 * correct / len(comparable), 2) if comparable else None,
                       "verdicts_differing": len(differing), "differing_examples": differing[:_EXAMPLES]}
    return {"run": str(run_dir), "result_file": str(result_file), "recorded_parser": recorded,
            "parser_options": options, "baseline": baseline, "recorded_steps": len(steps),
            "completions": completions, "tasks": tasks, **({"notes": notes} if notes else {})}


def to_markdown(report: dict[str, Any]) -> str:
    base = report["baseline"]
    lines = [f"# Parser comparison: {report['run']}", "",
             (f"Recorded parser: {report['recorded_parser'] or 'unknown'}; {report['recorded_steps']} recorded "
             f"completions; baseline: {base}."), "", "## Recorded completions", "",
             (f"| parser | calls | steps with calls | parse failures | partial parses | format deviations | "
              f"disagreements with {base} |"), "|---|---:|---:|---:|---:|---:|---:|"]
    for name, entry in report["completions"].items():
        lines.append(f"| {name} | {entry['calls']} | {entry['steps_with_calls']} | {entry['parse_failures']} | "
                     f"{entry['partial_parses']} | {_deviations_cell(entry['format_deviations'])} | "
                     f"{entry['disagreements']} |")
    lines += ["", "## Task verdicts (replayed)", "",
              (f"| parser | tasks | correct | errors | not comparable | accuracy % | accuracy % of comparable | "
              f"verdicts differing from {base} |"), "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, entry in report["tasks"].items():
        lines.append(f"| {name} | {entry['tasks']} | {entry['correct']} | {entry['errors']} | "
                     f"{entry['not_comparable']} | {_percent(entry['accuracy'])} | "
                     f"{_percent(entry['accuracy_comparable'])} | {entry['verdicts_differing']} |")
    lines += ["", NOT_COMPARABLE_NOTE]
    examples = [(name, entry["examples"]) for name, entry in report["completions"].items() if entry["examples"]]
    if examples:
        lines += ["", "## Disagreements (examples)"]
        for name, items in examples:
            lines += ["", f"### {name} vs {base}", ""]
            for item in items:
                lines.append(f"- `{item['request']}` ({', '.join(item['differs'])} differ) raw "
                             f"{json.dumps(item['raw'], ensure_ascii=False)}: "
                             f"{base} {json.dumps(item[base], ensure_ascii=False)}; "
                             f"{name} {json.dumps(item[name], ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


NOT_COMPARABLE_NOTE = (
    "accuracy %: correct tasks over all tasks, the figure a replay with that parser (`run --backend replay "
    "--parser X`) and `explain` give. A task \"not comparable\" reached a step the run never recorded (the "
    "parser read an earlier reply otherwise): the replay records that step as an error, so it counts as an "
    "error there and here; \"accuracy % of comparable\" leaves those tasks out of the denominator, which is "
    "why it is higher.")


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _deviations_cell(kinds: dict[str, int]) -> str:
    """`0`, or the steps with a format deviation and their kinds: `3 (bare_json 1, fenced_json 2)`."""
    if not kinds:
        return "0"
    return f"{sum(kinds.values())} ({', '.join(f'{kind} {steps}' for kind, steps in kinds.items())})"
