"""The release protocol: the benchmark's released evaluator, bit for bit (docs/evaluation.md)."""

from __future__ import annotations

from typing import Any

from wtb_local.benchmark.protocols.base import Protocol, ProtocolRun


class ReleaseProtocol(Protocol):
    name = "release"
    checker = "strict"
    hash_value = None

    def check(self, options: Any) -> None:
        if options.paper_family:
            raise ValueError("--paper-family applies to --protocol paper only")

    def apply(self, values: dict[str, Any], *, renderer: Any, parser: Any, selected: list[Any],
              parses_replies: bool) -> ProtocolRun:
        from wtb_local.benchmark.evaluator.episode import session_episodes  # deferred: start-up

        section = {"name": self.name, "checker": self.checker, "rules": "the released evaluator (docs/evaluation.md)"}
        return ProtocolRun(renderer, parser, session_episodes, section)
