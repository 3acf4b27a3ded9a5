"""Steps that ended at the token limit, counted from a result file's recorded steps.

A step cut by `max_new_tokens` is scored like any other (usually an error), so a budget too small for
the model silently lowers its row. Counting the cuts, and the cuts inside reasoning (the model never
got to answer), tells a run with a too-small budget from a weak model; more than `WARN_SHARE` of the
steps cut earns a warning.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from typing_extensions import TypedDict

WARN_SHARE = 0.05


class LengthCuts(TypedDict):
    """The run's cuts, as the manifest's `summary.length_cuts` records them."""

    steps: int  # generated steps (those with a finish_reason)
    length: int  # steps cut at the token limit
    length_in_reasoning: int  # those cut inside reasoning
    share: float  # length / steps (0 when no step)


def _outputs(result_rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for row in result_rows:
        for task in row.get("result") or []:
            log = task.get("inference_log") if isinstance(task, dict) else None
            for key, step in (log or {}).items():
                output = step.get("inference_output") if key.startswith("step_") and isinstance(step, dict) else None
                if isinstance(output, dict):
                    yield output


def cut_in_reasoning(output: dict[str, Any]) -> bool:
    """A length-cut step whose reply is reasoning only: no content, no call and no parse error (a call cut
    mid-way is reported as a truncated call instead)."""
    return (output.get("finish_reason") == "length" and bool(output.get("reasoning_content"))
            and not output.get("content") and not output.get("tool_calls") and not output.get("parse_errors"))


def length_cuts(result_rows: Iterable[dict[str, Any]]) -> LengthCuts:
    """How many generated steps of the result rows ended at the token limit (`LengthCuts`)."""
    steps = length = in_reasoning = 0
    for output in _outputs(result_rows):
        if "finish_reason" not in output:  # reply-level backends (scripted) generate nothing
            continue
        steps += 1
        if output["finish_reason"] == "length":
            length += 1
            in_reasoning += cut_in_reasoning(output)
    share = round(length / steps, 4) if steps else 0.0
    return {"steps": steps, "length": length, "length_in_reasoning": in_reasoning, "share": share}


def cuts_line(cuts: LengthCuts) -> str:
    """`3 of 40 (7.50%), 2 inside reasoning`."""
    return (f"{cuts['length']} of {cuts['steps']} ({100 * cuts['share']:.2f}%), "
            f"{cuts['length_in_reasoning']} inside reasoning")


def cuts_warning(cuts: LengthCuts, max_new_tokens: int | None) -> str | None:
    """The warning for a run with more than WARN_SHARE of its steps cut, or None."""
    if not cuts.get("steps") or cuts["length"] / cuts["steps"] <= WARN_SHARE:
        return None
    budget = f"max_new_tokens was {max_new_tokens}" if max_new_tokens else "max_new_tokens unknown"
    return (f"warning: {cuts['length']} of {cuts['steps']} steps ({100 * cuts['share']:.2f}%, over "
            f"{100 * WARN_SHARE:.0f}%) ended at the token limit, {cuts['length_in_reasoning']} inside reasoning "
            f"({budget}): the row is lowered by the budget, not only the model; rerun with a larger "
            "--max-new-tokens into a new --out")
