"""The gap between two runs, one factor at a time: a waterfall from the first run's accuracy to the second's.

Starting from run A's verdicts, the factors that need no generation are replaced by run B's, in this
order, each step's verdicts computed for real:

1. parser: A's recorded raw completions replayed through B's parser (`run --backend replay --parser`, as
   `parsers compare` does), judged with A's checker. Possible when both parsers are registered parsers
   (not a protocol's own parse rule) and A recorded raw completions;
2. checker: those result rows re-scored with B's argument checker (as `rescore` does);
3. generation: the rest, B's verdicts minus the last step's: everything that needs new completions
   (prompt and completion factors, the steps B's parser led the conversation to, and the engine's own
   nondeterminism).

The parts add up to the gap exactly (they are differences of counts of correct tasks over the same tasks).
A step of the replay that A never recorded (B's parser led the conversation elsewhere) is an error, as in
a replay run; how many tasks reached one is said, and their change in generation is the parser's too: B
generated those steps because its parser read what A's did not.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from wtb_local.analysis.explain.factors import FACTORS
from wtb_local.analysis.explain.runs import ExplainRun, TaskKey
from wtb_local.contract.rows import SessionView, iter_steps

Verdicts = dict[TaskKey, bool]


def session_sets(runs: list[ExplainRun], keys: list[TaskKey]) -> dict[str, list[TaskKey]]:
    """Sessions all of whose tasks are compared -> their task keys (session accuracy counts only those)."""
    by_session: dict[str, list[TaskKey]] = {}
    for key in keys:
        by_session.setdefault(key[0], []).append(key)
    sessions = runs[0].sessions
    return {sid: tasks for sid, tasks in by_session.items()
            if sid in sessions and len(tasks) == len(sessions[sid].english_tasks)}


def counts(verdicts: Verdicts, keys: list[TaskKey], sessions: dict[str, list[TaskKey]]) -> tuple[int, int]:
    """(correct tasks, correct sessions) over the compared tasks and complete sessions."""
    return (sum(1 for key in keys if verdicts.get(key, False)),
            sum(1 for tasks in sessions.values() if all(verdicts.get(key, False) for key in tasks)))


def _registered(parser: str | None) -> bool:
    from wtb_local.formats.parsers import parser_names  # deferred: start-up

    return bool(parser) and parser in parser_names()


def _parser_of(run: ExplainRun) -> str | None:
    return run.manifest.parser_name


def _protocol_of(run: ExplainRun) -> str | None:
    return run.manifest.protocol.name


def _views(rows: list[dict[str, Any]], source: object) -> list[SessionView]:
    """Result rows (checked when they were scored) as read-only views, numbered as listed."""
    return [SessionView.of(str(source), line, row) for line, row in enumerate(rows, start=1)]


def _has_raw(run: ExplainRun) -> bool:
    return any(step.raw is not None for _, _, step in iter_steps(_views(list(run.result_rows.values()),
                                                                         run.result_file)))


class _Replayed(Protocol):
    """What `reparse` reads of a replay's outcome (`runner.job.replay_run`'s, a room this one cannot import)."""

    @property
    def result_rows(self) -> list[dict[str, Any]]: ...


def reparse(run: ExplainRun, parser: str, replay: Callable[..., _Replayed]) -> list[dict[str, Any]]:
    """`run`'s recorded completions replayed through `parser` by `replay` (`runner.job.replay_run`, which
    `explain` passes): the replay's result rows (scored rows are recomputed by the caller with whichever
    checker it needs)."""
    config = run.manifest.config
    dataset = run.dataset_path or (run.manifest.dataset_source or "release")
    with tempfile.TemporaryDirectory(prefix="wtb-explain-") as scratch:
        outcome = replay(run.result_file, parser=parser, dataset=dataset, out=Path(scratch) / "replay",
                         model=config.model, model_name=config.model_name or run.model_name,
                         protocol=_protocol_of(run))
    return outcome.result_rows


def rescore(run: ExplainRun, rows: list[dict[str, Any]], checker: str) -> Verdicts:
    """Verdicts of `rows` (result rows of `run`'s tasks) judged by `checker`."""
    from wtb_local.analysis.reports.runs import task_records  # deferred: start-up
    from wtb_local.benchmark.protocols import score_with  # deferred: start-up

    sessions = list(run.sessions.values())
    score_rows, _metric = score_with(checker, rows, sessions, run.model_name, str(run.result_file))
    return {(t.session_id, t.task_idx): t.correct for t in task_records(score_rows, sessions, checker)}


def _unrecorded(rows: list[dict[str, Any]], keys: list[TaskKey]) -> set[TaskKey]:
    from wtb_local.analysis.commands.parser_comparison import UNRECORDED  # deferred: start-up

    found = {(session.id, task.task_idx) for session, task, step in iter_steps(_views(rows, "replay"))
             if (step.error_reason or "").startswith(UNRECORDED)}
    return found & set(keys)


def _part(name: str, factors: list[str], how: str, before: Verdicts, after: Verdicts, keys: list[TaskKey],
          sessions: dict[str, list[TaskKey]], note: str | None = None) -> dict[str, Any]:
    (t0, s0), (t1, s1) = counts(before, keys, sessions), counts(after, keys, sessions)
    return {"part": name, "factors": factors, "how": how, "task_correct": t1 - t0, "session_correct": s1 - s0,
            "task": 100.0 * (t1 - t0) / len(keys) if keys else 0.0,
            "session": 100.0 * (s1 - s0) / len(sessions) if sessions else 0.0,
            "tasks_changed": sum(1 for key in keys if before.get(key) != after.get(key)), "note": note}


def decompose(a: ExplainRun, b: ExplainRun, keys: list[TaskKey],
              reparse_with: Callable[[ExplainRun, str], list[dict[str, Any]]]) -> dict[str, Any]:
    """The waterfall from `a` to `b` on the compared tasks `keys`."""
    sessions = session_sets([a, b], keys)
    differing = {f.name for f in FACTORS if a.factors[f.name] != b.factors[f.name]}
    verdicts = dict(a.verdicts)
    rows = list(a.result_rows.values())
    parts = []
    led: set[TaskKey] = set()  # tasks the re-parse led to steps A never generated

    parser_a, parser_b = _parser_of(a), _parser_of(b)
    if "parser" not in differing:
        parts.append(_part("parser", [], "the same parser: nothing to replace", verdicts, verdicts, keys, sessions))
    elif not (_registered(parser_a) and _registered(parser_b)):
        parts.append(_part("parser", ["parser"], "not separable: a protocol's own parse rule "
                           f"({parser_a} vs {parser_b}) goes with its prompts; counted in generation",
                           verdicts, verdicts, keys, sessions))
    elif not _has_raw(a) or a.result_file is None:
        parts.append(_part("parser", ["parser"], f"not separable: {a.label} records no raw completions to "
                           "re-parse; counted in generation", verdicts, verdicts, keys, sessions))
    else:
        rows = reparse_with(a, str(parser_b))
        after = rescore(a, rows, a.records.checker)
        led = _unrecorded(rows, keys)
        note = (f"{len(led)} task(s) reached a step {a.label} never recorded (the parse led the conversation "
                "elsewhere): errors, as in a replay run") if led else None
        parts.append(_part("parser", ["parser"], f"{a.label}'s raw completions replayed through {parser_b}, "
                           f"judged with the {a.records.checker} checker", verdicts, after, keys, sessions, note))
        verdicts = after

    checker_b = b.records.checker
    if "checker" not in differing:
        parts.append(_part("checker", [], "the same checker: nothing to replace", verdicts, verdicts, keys,
                           sessions))
    else:
        after = rescore(a, rows, checker_b)
        parts.append(_part("checker", ["checker"], f"the same result rows re-scored with the {checker_b} checker",
                           verdicts, after, keys, sessions))
        verdicts = after

    generation = [f.name for f in FACTORS if f.name in differing and f.stage in ("prompt", "completion")]
    rest = [name for name in ("evaluator",) if name in differing]
    changed = {key for key in keys if verdicts.get(key) != b.verdicts.get(key)}
    by_parse, other = changed & led, changed - led  # led: B generated the steps its parse led to
    new_steps = (f"the steps {b.label}'s parser led the conversation to, which {a.label} never generated "
                 f"({len(by_parse)} task(s))")
    if generation:
        how = "the rest, which needs new completions: " + ", ".join(generation) + (f"; and {new_steps}" if by_parse else "")
    elif other:
        how = ("no recorded prompt or completion factor differs: the engine's own nondeterminism"
               + (f" ({len(other)} task(s)); and {new_steps}" if by_parse else ""))
    elif by_parse:
        how = f"new completions for {new_steps}"
    else:
        how = "the same completions: nothing left"
    if by_parse and "parser" not in generation:
        generation = ["parser", *generation]
    parts.append(_part("generation", generation + rest, how, verdicts, b.verdicts, keys, sessions))
    (ta, sa), (tb, sb) = counts(a.verdicts, keys, sessions), counts(b.verdicts, keys, sessions)
    return {"a": a.label, "b": b.label, "tasks": len(keys), "sessions": len(sessions),
            "task": {"a": 100.0 * ta / len(keys) if keys else 0.0, "b": 100.0 * tb / len(keys) if keys else 0.0},
            "session": {"a": 100.0 * sa / len(sessions) if sessions else 0.0,
                        "b": 100.0 * sb / len(sessions) if sessions else 0.0},
            "parts": parts}
