"""A run's health, per model: is a low score the model or the run? Parse failures, completions cut by the
token limit (inside the reasoning or not), steps with a tool call written inside the reasoning block, steps
with tool calls written in a foreign wrapper (format deviations), requests that failed and why, tokens per
task, latency per step, wall time.

Read from the result file's steps (`raw`, `parse_errors`, `calls_in_reasoning`, `format_deviation`,
`finish_reason`, `error_reason`, `reasoning_content`/`content`/`tool_calls`) and per-task `latency`/
`input_token_count`/`output_token_count` lists, and from the manifest's `invocations[].wall_s` and `status`. Whatever a file
lacks (the benchmark harness's files have no raw completions) shows as None ("n/a").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from wtb_local.analysis.reports.columns import pairs_of
from wtb_local.benchmark.scoring.length_cuts import cut_in_reasoning
from wtb_local.contract.faults import failed_request, masked
from wtb_local.contract.manifest import Manifest
from wtb_local.contract.run_dir import as_manifest

HEALTH_COLUMNS: tuple[tuple[str, str], ...] = tuple(pairs_of("health"))  # analysis/reports/columns.py


def _steps(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for row in rows:
        tasks = row.get("result", row.get("results"))
        for task in tasks if isinstance(tasks, list) else []:
            log = task.get("inference_log") if isinstance(task, dict) else None
            for key, step in (log or {}).items():
                if key.startswith("step_") and isinstance(step, dict):
                    output = step.get("inference_output")
                    yield output if isinstance(output, dict) else {}


def _tasks(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for row in rows:
        tasks = row.get("result", row.get("results"))
        yield from (task for task in (tasks if isinstance(tasks, list) else []) if isinstance(task, dict))


def _numbers(task: dict[str, Any], key: str) -> list[float]:
    values = task.get(key)
    return [float(v) for v in values if isinstance(v, int | float)] if isinstance(values, list) else []


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run_health(result_rows: list[dict[str, Any]] | None, score_rows: list[dict[str, Any]] | None,
               manifest: Manifest | dict[str, Any] | None) -> dict[str, Any]:
    """The health figures of one run (None where the files do not say)."""
    manifest = as_manifest(manifest)
    rows = result_rows if result_rows is not None else (score_rows or [])
    steps = list(_steps(rows))
    tasks = list(_tasks(rows))
    completions = [s for s in steps if "raw" in s or "finish_reason" in s]
    served = [s for s in completions if s.get("finish_reason") != "error"]
    length = [s for s in served if s.get("finish_reason") == "length"]
    in_reasoning = [s for s in length if cut_in_reasoning(s)]  # the run summary's definition
    reasons: Counter[str] = Counter()
    for step in steps:
        if failed_request(step):  # the rule the run's own warning and manifest count by
            reasons[masked(str(step.get("error_reason") or "unknown"))] += 1
    crashed = sum(1 for row in rows if isinstance(row.get("result", row.get("results")), str))
    if crashed:
        reasons["session recorded as an error string"] += crashed
    prompt = [sum(_numbers(t, "input_token_count")) for t in tasks]
    generated = [sum(_numbers(t, "output_token_count")) for t in tasks]
    latency = [v for t in tasks for v in _numbers(t, "latency") if v > 0]
    walls = [getattr(i, "wall_s", None) for i in manifest.invocations] if manifest is not None else []
    walls = [float(w) for w in walls if isinstance(w, int | float)]
    return {
        "tasks": len(tasks),
        "steps": len(steps),
        "parse_failure_pct": (100.0 * sum(1 for s in served if s.get("parse_errors")) / len(served)
                              if served else None),
        "length_steps": len(length) if completions else None,
        "length_in_reasoning": len(in_reasoning) if completions else None,
        # steps with a call written inside the reasoning block (docs/parser-policies.md §1)
        "calls_in_reasoning": sum(1 for s in served if s.get("calls_in_reasoning")) if completions else None,
        # steps with tool calls written in a foreign wrapper (docs/parser-policies.md §3)
        "format_deviations": sum(1 for s in served if _deviation(s)) if completions else None,
        "failed_requests": sum(reasons.values()) if completions or crashed else None,
        "failed_reasons": "; ".join(f"{reason} ×{n}" for reason, n in sorted(reasons.items())) or "",
        "prompt_tokens_per_task": sum(prompt) / len(prompt) if prompt and any(prompt) else None,
        "generated_tokens_per_task": sum(generated) / len(generated) if generated and any(generated) else None,
        "latency_mean_s": sum(latency) / len(latency) if latency else None,
        "latency_p95_s": _percentile(latency, 0.95) if latency else None,
        "wall_s": sum(walls) if walls else None,
        "status": str((manifest.status if manifest is not None else None) or "n/a"),
    }


def reasoning_calls_line(result_rows: list[dict[str, Any]], protocol: str | None) -> str | None:
    """The run's one line about steps with a tool call written inside the reasoning block, None when there
    is none; the policy it states is the protocol's (docs/parser-policies.md §1)."""
    steps = [s for s in _steps(result_rows) if s.get("calls_in_reasoning")]
    if not steps:
        return None
    calls = sum(int(s["calls_in_reasoning"]) for s in steps)
    from wtb_local.benchmark.protocols import find_protocol, protocol_named

    policy = (find_protocol(protocol) or protocol_named(None)).calls_in_reasoning
    return (f"steps with a tool call inside the reasoning block: {len(steps)} ({calls} call(s), {policy}; "
            "docs/parser-policies.md)")


def _deviation(step: dict[str, Any]) -> tuple[str, int] | None:
    """(kind, calls) of a step's recorded format deviation, None when it has none."""
    record = step.get("format_deviation")
    if not isinstance(record, dict):
        return None
    kind, calls = record.get("kind"), record.get("calls")
    if not isinstance(kind, str) or not isinstance(calls, int) or isinstance(calls, bool) or calls < 1:
        return None
    return kind, calls


def format_deviation_counts(result_rows: list[dict[str, Any]] | None) -> dict[str, dict[str, int]] | None:
    """kind -> {"steps", "calls"} over a run's steps, sorted by kind (docs/parser-policies.md §3); None when
    no step records a raw completion (nothing could be counted)."""
    steps = list(_steps(result_rows or []))
    if not any("raw" in step or "finish_reason" in step for step in steps):
        return None
    counts: dict[str, dict[str, int]] = {}
    for step in steps:
        found = _deviation(step)
        if found is not None:
            entry = counts.setdefault(found[0], {"steps": 0, "calls": 0})
            entry["steps"] += 1
            entry["calls"] += found[1]
    return dict(sorted(counts.items()))


def format_deviations_line(result_rows: list[dict[str, Any]], protocol: str | None) -> str | None:
    """The run's one line about steps with tool calls written in a foreign wrapper, None when there is
    none; the policy it states is the protocol's (docs/parser-policies.md §3)."""
    counts = format_deviation_counts(result_rows) or {}
    if not counts:
        return None
    from wtb_local.benchmark.protocols import find_protocol, protocol_named

    policy = (find_protocol(protocol) or protocol_named(None)).format_deviations
    steps = sum(entry["steps"] for entry in counts.values())
    calls = sum(entry["calls"] for entry in counts.values())
    kinds = ", ".join(f"{kind} {entry['steps']}" for kind, entry in counts.items())
    return (f"steps with tool calls outside the model's tool-call format: {steps} ({kinds}; {calls} call(s), "
            f"{policy}; docs/parser-policies.md)")
