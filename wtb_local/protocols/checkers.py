"""The two argument checkers a run can be scored with: the released evaluator's (`strict`) and the paper
harness's (`lenient`); each protocol names its own, `rescore` applies the other one."""

from __future__ import annotations

from typing import Any

CHECKERS = ("strict", "lenient")


def score_with(checker: str, result_rows: list[dict[str, Any]], sessions: list[Any], model_name: str,
               source: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Score result rows with the released evaluator's checker (`strict`) or the paper harness's
    (`lenient`, docs/evaluation.md)."""
    if checker == "lenient":
        from wtb_local.protocols.setup import score_lenient

        return score_lenient(result_rows, sessions, model_name)
    if checker != "strict":
        raise ValueError(f"unknown checker {checker!r}; choose one of {', '.join(CHECKERS)}")
    from wtb_local.scoring import score_results

    return score_results(result_rows, sessions, model_name, source=source)
