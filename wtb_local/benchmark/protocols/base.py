"""What an evaluation protocol is: one object per protocol (`release`, `paper`) that `prepare`, the loop,
the scorer and the manifest ask, instead of testing the protocol's name (docs/architecture.md,
"A new protocol")."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class ProtocolRun:
    """A protocol applied to one prepared run: what the model sees and how its replies are read."""

    renderer: Any
    parser: Any
    episodes_for: Callable[[Any], list[Any]]  # a session's episodes, one per task
    section: dict[str, Any]  # the manifest's `protocol` key
    template_sha256: str | None = None  # the template the protocol renders with, when it replaced the run's
    parser_name: str | None = None  # the parser name recorded (and hashed) when the protocol replaced it
    state: Any = field(default=None, compare=False)


class Protocol(ABC):
    name: ClassVar[str]
    checker: ClassVar[str]  # the argument checker its runs are scored with ("strict", "lenient")
    # what happens to a tool call written inside the reasoning block (docs/parser-policies.md §1)
    calls_in_reasoning: ClassVar[str] = "not executed, as vLLM's reasoning parsers drop them"
    # what happens to tool calls written in a foreign wrapper (docs/parser-policies.md §3)
    format_deviations: ClassVar[str] = "not executed: judged as text replies, as the released evaluator does"
    reproduces_paper: ClassVar[bool] = False  # runs as the paper's harness did (its numbers are comparable)
    # renders with the project's template overrides when a model's own template cannot render the run
    # (release); False: always the model's own template, as the paper's harness did
    uses_template_overrides: ClassVar[bool] = True
    # The value in the run's hashed configuration (None: left out, so runs made before protocols resume).
    hash_value: ClassVar[str | None]

    def label(self, model_name: str) -> str:
        """The run's row label."""
        return model_name if self.hash_value is None else f"{model_name} [{self.name}]"

    def dir_suffix(self) -> str:
        """What the default run directory adds (`runs/<model>-paper`)."""
        return "" if self.hash_value is None else f"-{self.name}"

    def check(self, options: Any) -> None:
        """Options this protocol cannot work with (one line)."""

    def default_parser(self, values: dict[str, Any]) -> str | None:
        """The tool-call parser when --parser is not given (None: chosen from the template/model id)."""
        return None

    def sampling(self, values: dict[str, Any], sources: dict[str, str], options: Any, stderr: Any) -> None:
        """Replace sampling values the protocol fixes, saying so in one line for any the user gave."""

    @abstractmethod
    def apply(self, values: dict[str, Any], *, renderer: Any, parser: Any, selected: list[Any],
              parses_replies: bool) -> ProtocolRun:
        """The renderer, parser, episodes and manifest section of a run."""

    def planned_parser(self, values: dict[str, Any], native: Any) -> tuple[str, str]:
        """(parser name, family label) a run will read replies with, for a plan made before any run
        (`plan`): the protocol's parser around the native one `native`."""
        return native.name, self.name

    def step_episodes(self, session: Any, model: str) -> list[Any]:
        """One session's episodes for `render` (no run prepared)."""
        from wtb_local.benchmark.evaluator.episode import session_episodes  # deferred: start-up

        return session_episodes(session)

    def step_renderer(self, renderer: Any, model: str, *, chat_template_given: bool) -> Any:
        """The renderer `render` shows a step with."""
        return renderer

    def score(self, result_rows: list[dict[str, Any]], sessions: list[Any], model_name: str,
              source: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        from wtb_local.benchmark.protocols.checkers import score_with

        return score_with(self.checker, result_rows, sessions, model_name, source)
