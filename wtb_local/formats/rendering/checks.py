"""Checking the fast prompt paths against the reference path (docs/runner-speed.md §7).

Two fast paths build a run's prompts: `FastTemplate` (renderer.py) renders without apply_chat_template's
per-call overhead and `SegmentEncoder` (segment_tokens.py) tokenises by cached pieces. Each must give
exactly what the reference path gives: apply_chat_template's text, the whole prompt's token ids. Here:

- `CheckPolicy`: which fast results are also made the reference way and compared (`--verify-prompts`):
  the first `FIRST` of each path in each process and every N-th after (`all`: every one);
- `PromptChecks`: one process's counts (the event loop's renderer, or a render worker's copy of it) and the
  mismatches it found, waiting to be taken by whoever knows the step they belong to;
- `PromptAudit`: the run's record. It names each mismatch's session, task and step, says it in one line
  on stderr, and stops the run or lets it go on with the reference path (`--on-prompt-mismatch`); its
  `record()` is the manifest's `prompt_checks`.

On a mismatch the reference result is the step's prompt, and the fast path that differed is off for the
rest of the run, in every process: a difference seen once shows the fast path does not hold for this
template or tokenizer, and which other prompts it would spoil is unknown, since only the checked ones
are compared.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

FIRST = 4  # every process checks its first renderings and tokenisations, whatever N is
DEFAULT_VERIFY_EVERY = 64
ALL = "all"
MISMATCH_MODES = ("reference", "stop")
PATHS = ("rendering", "tokenisation")
_REFERENCE = {"rendering": "apply_chat_template", "tokenisation": "whole-prompt tokenisation"}
_UNIT = {"rendering": "character", "tokenisation": "token"}
_EXCERPT = 40  # characters (8 tokens) of each side shown from just before the first difference


def parse_every(value: str | int) -> int:
    """`--verify-prompts` as the N of "every N-th": `all` is 1. Raises ValueError for anything else than a
    positive number or `all` (0 would leave the fast paths unchecked: there is no such setting)."""
    text = str(value).strip().lower()
    if text == ALL:
        return 1
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{value!r} is not a positive number or {ALL} (0 is refused: the fast paths are "
                         f"always checked at least on their first {FIRST} prompts)")
    return int(text)


@dataclass(frozen=True)
class CheckPolicy:
    every: int = DEFAULT_VERIFY_EVERY  # 1: every fast result is checked

    def due(self, count: int) -> bool:
        """Whether the `count`-th fast result (1-based) of a path in one process is checked."""
        return count <= FIRST or count % self.every == 0


@dataclass
class Mismatch:
    """A fast result that differed from the reference's."""

    path: str  # "rendering" or "tokenisation"
    index: int  # the n-th fast result of that path in its process
    position: int  # the first differing character (rendering) or token (tokenisation)
    fast: Any  # the fast result from just before `position` (text, or a list of ids)
    reference: Any  # the reference's, from the same place
    where: str = "the event loop"  # or "render worker N"


def first_difference(fast: Any, reference: Any) -> int:
    """The first position where two texts (or id lists) differ; the shorter one's length when one is a
    prefix of the other."""
    for position, (a, b) in enumerate(zip(fast, reference)):
        if a != b:
            return position
    return min(len(fast), len(reference))


class PromptChecks:
    """One process's checks: counts per path (fast results, of those checked, results made by the
    reference path alone because the fast path was off), and the mismatches found since `take()`."""

    def __init__(self, policy: CheckPolicy | None = None) -> None:
        self.policy = policy or CheckPolicy()
        self.counts = {path: [0, 0, 0] for path in PATHS}  # fast, checked, reference
        self.found: list[Mismatch] = []

    def fresh(self) -> PromptChecks:
        return PromptChecks(self.policy)

    def fast(self, path: str) -> bool:
        """Count a fast result of `path`; whether it is to be checked."""
        counts = self.counts[path]
        counts[0] += 1
        if self.policy.due(counts[0]):
            counts[1] += 1
            return True
        return False

    def reference(self, path: str) -> None:
        """Count a result made by the reference path alone."""
        self.counts[path][2] += 1

    def mismatch(self, path: str, fast: Any, reference: Any) -> None:
        position = first_difference(fast, reference)
        width = _EXCERPT if path == "rendering" else _EXCERPT // 5
        start = max(0, position - width // 4)
        self.found.append(Mismatch(path, self.counts[path][0], position, _excerpt(fast, start, width),
                                   _excerpt(reference, start, width)))

    def take(self) -> list[Mismatch]:
        found, self.found = self.found, []
        return found

    def totals(self) -> tuple[int, ...]:
        """The counts as one flat tuple (what a render worker sends with each prompt)."""
        return tuple(n for path in PATHS for n in self.counts[path])


def _excerpt(value: Any, start: int, width: int) -> Any:
    part = value[start:start + width]
    return part if isinstance(part, str) else list(part)


class PromptMismatchError(RuntimeError):
    """A fast path differed from the reference path under `--on-prompt-mismatch stop`: the run stops."""


class PromptAudit:
    """The run's record of the fast paths' checks (module docstring). `start(renderer)` gives the renderer
    fresh checks under the run's policy before its render workers copy it; `pool` is set when render
    workers build the prompts."""

    def __init__(self, every: int, on_mismatch: str, err: Any) -> None:
        if on_mismatch not in MISMATCH_MODES:
            raise ValueError(f"--on-prompt-mismatch: {on_mismatch!r} is not one of {', '.join(MISMATCH_MODES)}")
        self.policy = CheckPolicy(every)
        self.on_mismatch = on_mismatch
        self.err = err
        self.renderer: Any = None
        self.pool: Any = None
        self.mismatches = 0
        self.first: dict[str, Any] | None = None

    def start(self, renderer: Any) -> None:
        """Fresh checks under the run's policy; a mismatch found while the run was prepared (the prompts
        that size the context window, the thinking probe) is recorded first, with no step."""
        self.renderer = renderer
        earlier = renderer.prompt_checks.take()
        renderer.check_prompts(self.policy)
        self.found(earlier)

    def found(self, mismatches: list[Mismatch], *, session: str | None = None, task: int | None = None,
              step: int | None = None) -> None:
        """Mismatches found while building the prompt of (session, task, step): recorded and said in one
        line each; under `stop`, the run stops (raises PromptMismatchError) before that prompt is sent."""
        for mismatch in mismatches:
            self.mismatches += 1
            example = {"session": session, "task": task, "step": step, **asdict(mismatch)}
            if self.first is None:
                self.first = example
            prompt = f"{session} task {task} step {step}" if session is not None else \
                "a prompt rendered while the run was prepared"
            line = (f"prompt check: the fast {mismatch.path} of {prompt} ({mismatch.where}) differed from "
                    f"{_REFERENCE[mismatch.path]} at {_UNIT[mismatch.path]} {mismatch.position}")
            if self.on_mismatch == "stop":
                raise PromptMismatchError(f"{line} (--on-prompt-mismatch stop); rerun with "
                                          "--on-prompt-mismatch reference to go on with the reference path")
            self.renderer.use_reference(mismatch.path)  # and render workers started from now on
            print(f"warning: {line}: that prompt and all later ones use {_REFERENCE[mismatch.path]} "
                  "(manifest: prompt_checks)", file=self.err)

    def record(self) -> dict[str, Any]:
        """The manifest's `prompt_checks`: the policy, the counts over every process, the mismatches."""
        counts = {path: [0, 0, 0] for path in PATHS}
        sources = []
        if self.renderer is not None:
            sources.append(self.renderer.check_prompts_totals())
        if self.pool is not None:
            sources.extend(self.pool.check_totals())
        for totals in sources:
            for i, path in enumerate(PATHS):
                for j in range(3):
                    counts[path][j] += totals[3 * i + j]
        return {
            "every": self.policy.every, "first": FIRST, "on_mismatch": self.on_mismatch,
            **{path: dict(zip(("fast", "checked", "reference"), counts[path])) for path in PATHS},
            "mismatches": self.mismatches, "first_mismatch": self.first, "notes": self.notes(),
        }

    def notes(self) -> list[str]:
        """Why a fast path was off, per process that built the run's prompts (a mismatch, or a tokenizer that
        is not piecewise): the render workers', else the event loop's."""
        if self.pool is not None:
            return list(self.pool.notes)
        return [f"event loop: {note}" for note in self.renderer.check_notes()] if self.renderer is not None else []


def resolve_prompt_checks(verify: str, on_mismatch: str, sources: dict[str, str], *, renderer: Any,
                          renders_prompts: bool, given: set[str] | frozenset[str], err: Any) -> tuple[Any, Any]:
    """`--verify-prompts` and `--on-prompt-mismatch` as the run applies them: as given (or defaulted) when
    the run's prompts go through the fast paths; else None for both, with the reason as their source, and
    a value the user gave said, in one line, to change nothing."""
    if renders_prompts and hasattr(renderer, "check_prompts"):
        return verify, on_mismatch
    why = ("the backend renders no prompts" if not renders_prompts
           else f"the {type(renderer).__name__} has no fast paths (every prompt is rendered by the reference path)")
    named = [f"--{name.replace('_', '-')}" for name in ("verify_prompts", "on_prompt_mismatch") if name in given]
    if named:
        print(f"warning: {' and '.join(named)} change{'s' if len(named) == 1 else ''} nothing: {why}", file=err)
    sources["verify_prompts"] = sources["on_prompt_mismatch"] = why
    return None, None
