"""The lines `run` prints after a run, and `run --repeats` after each repeat: what went wrong or was cut
(failed requests and why, steps cut at the token limit, calls in reasoning or outside the model's format),
so a low score is seen to be the run's or the model's."""

from __future__ import annotations

from collections import Counter
from typing import Any

import click

from wtb_local.contract.faults import failed_request, masked, step_outputs


def health_lines(outcome: Any, prefix: str = "") -> list[str]:
    """What went wrong or was cut in a run, each line after `prefix` (a repeat names its seed): failed
    requests, steps cut at the token limit, calls in reasoning, calls outside the model's format. Returns
    the lines printed (summary.md keeps them under the tables)."""
    printed: list[str] = []

    def echo(line: str, err: bool = False) -> None:
        printed.append(line)
        click.echo(line, err=err)

    from wtb_local.analysis.reports.health import format_deviations_line, reasoning_calls_line
    from wtb_local.benchmark.scoring.length_cuts import cuts_line, cuts_warning  # deferred: start-up (--help)

    examples: dict[str, str] = {}
    failed = failed_requests(outcome.result_rows, set(outcome.ran_sessions), examples)
    if failed:
        # The progress line only counts them; say why, or a 0% row looks like the model's fault.
        kinds = _distinct_reasons(outcome.result_rows, set(outcome.ran_sessions))
        reasons = ", ".join(_reason_group(examples[reason], count, kinds[reason])
                            for reason, count in failed.most_common(3))
        more = f", {len(failed) - 3} other reason(s)" if len(failed) > 3 else ""
        echo(f"{prefix}warning: {sum(failed.values())} request(s) failed and were scored as step errors: "
             f"{reasons}{more}", err=True)
    run_settings = outcome.settings
    cuts = outcome.recorded.summary.length_cuts
    if cuts.steps:
        echo(f"{prefix}steps cut at the token limit: {cuts_line(cuts.written())} "
             f"(max_new_tokens {run_settings.sampling.max_new_tokens})")
        warning = cuts_warning(cuts.written(), run_settings.sampling.max_new_tokens)
        if warning:
            echo(f"{prefix}{warning}", err=True)
    for line in (reasoning_calls_line(outcome.result_rows, run_settings.protocol),
                 format_deviations_line(outcome.result_rows, run_settings.protocol)):
        if line:
            echo(f"{prefix}{line}")
    return printed


def failed_requests(result_rows: list[dict[str, Any]], sessions: set[str],
                    examples: dict[str, str] | None = None) -> Counter[str]:
    """Why the requests of these sessions failed (wtb_local/contract/faults.py: not built, not sent or not served),
    grouped by reason with its numbers masked; the warning shows each group's first message with its real
    numbers (filled into `examples`)."""
    from wtb_local.contract.faults import failed_requests as count

    return count([row for row in result_rows if row.get("id") in sessions], examples)



def _distinct_reasons(result_rows: list[dict[str, Any]], sessions: set[str]) -> dict[str, int]:
    """Per masked reason, how many different messages it groups (one per step when they name the step)."""
    seen: dict[str, set[str]] = {}
    for row in result_rows:
        if row.get("id") in sessions:
            for output in step_outputs(row):
                if failed_request(output):
                    reason = str(output.get("error_reason") or "unknown")
                    seen.setdefault(masked(reason), set()).add(reason)
    return {reason: len(messages) for reason, messages in seen.items()}


def _reason_group(example: str, count: int, distinct: int) -> str:
    """One group of the warning: its message and count; a group of messages that differ (each names its
    step) says the one shown is the first of them."""
    if distinct <= 1:
        return f"{example} ({count})"
    return f"{example} and {count - 1} more of that kind, with other numbers ({count})"
