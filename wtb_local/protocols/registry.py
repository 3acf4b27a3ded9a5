"""The protocols by name, and scoring with a named argument checker (`rescore` applies the other one)."""

from __future__ import annotations

from typing import Any

from wtb_local.protocols.base import Protocol

_PROTOCOLS = ("release", "paper")  # the first is the default
CHECKERS = ("strict", "lenient")


def protocol_names() -> tuple[str, ...]:
    return _PROTOCOLS


def protocol_named(name: str | None) -> Protocol:
    """The protocol object; None (a manifest or config without the key) is the default, `release`."""
    from wtb_local.protocols.paper import PaperProtocol
    from wtb_local.protocols.release import ReleaseProtocol

    for protocol in (ReleaseProtocol(), PaperProtocol()):
        if protocol.name == (name or _PROTOCOLS[0]):
            return protocol
    raise ValueError(f"unknown protocol {name!r}; choose one of {', '.join(_PROTOCOLS)}")


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
