"""The main job: dataset → run (resumable) → score → files → Table 6 row.

`run_job_async` prepares the run (prepare.py: options in, a frozen resolved run out), checks whether the run directory can be resumed
(resume.py), writes the manifest, runs the pending sessions (loop.py) with every finished session
appended to the result file at once (store.py), then scores the whole result file and writes the
score and metric files next to it (paths.py has the layout).
"""

from __future__ import annotations

import asyncio
import io
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

from wtb_local.benchmark.protocols.checkers import score_run
from wtb_local.benchmark.scoring.length_cuts import length_cuts
from wtb_local.contract.errors import RecordError, RunError, one_line
from wtb_local.contract.faults import INTERNAL_EXIT_CODE, Fault, FaultLog, InternalError, stop_line
from wtb_local.contract.lock_file import RunLock, locked
from wtb_local.contract.manifest import SCHEMA_VERSION, Manifest
from wtb_local.contract.messages import SessionResult
from wtb_local.contract.paths import MANIFEST_NAME
from wtb_local.contract.rows import ResultLines
from wtb_local.contract.run_dir import as_manifest, check_manifest
from wtb_local.contract.secrets import mask_url
from wtb_local.engines import backend_class, rerun_claim
from wtb_local.engines.base import Backend
from wtb_local.engines.environment import machine, package_versions
from wtb_local.run.errors import InternalErrors, LoopError
from wtb_local.run.loop.estimate import start_line
from wtb_local.run.loop.loop import SessionRunner, resolve_scheduling
from wtb_local.run.loop.progress import Loading, ProgressStats, make_progress
from wtb_local.run.loop.steps import StepDriver
from wtb_local.run.loop.stopping import RunInterrupted, StopSignal
from wtb_local.run.loop.stopping import current as current_stop
from wtb_local.run.loop.stopping import installed as stop_signals_installed
from wtb_local.run.loop.throughput import ThroughputMeter
from wtb_local.run.record import internal as internal_record
from wtb_local.run.record.manifest import read_manifest
from wtb_local.run.record.record import RunRecord, interrupted_line
from wtb_local.run.record.record import now as _now
from wtb_local.run.record.resume import check_resume
from wtb_local.run.record.store import ResultStore, session_index
from wtb_local.run.setup.config import config_hash, hashed_config
from wtb_local.run.setup.options import RunOptions
from wtb_local.run.setup.paths import RunPaths
from wtb_local.run.setup.prepare import PreparedRun, prepare


@dataclass
class RunOutcome:
    paths: RunPaths
    settings: Any  # the resolved run (run/setup/resolved.py)
    metric: dict[str, Any]
    score_rows: list[dict[str, Any]]
    result_rows: list[dict[str, Any]]
    manifest: dict[str, Any]
    skipped_sessions: list[str] = field(default_factory=list)
    ran_sessions: list[str] = field(default_factory=list)
    sessions: list[Any] = field(default_factory=list)  # the dataset's sessions: what the score rows are judged on

    @property
    def recorded(self) -> Manifest:
        """The manifest the run wrote, as its model: what the commands that print the run read."""
        return check_manifest(self.manifest, self.paths.run_dir / MANIFEST_NAME)


def _label_counts(row: SessionResult, _session: Any) -> tuple[int, int]:
    from wtb_local.benchmark.evaluator.judge import score_session

    results = score_session(row).get("results")
    if not isinstance(results, list):
        return 0, 0
    return sum(1 for task in results if task.get("label") == "correct"), len(results)


def _new_manifest(prep: PreparedRun, paths: RunPaths, config: dict[str, Any],
                  previous: dict[str, Any] | None) -> dict[str, Any]:
    settings = prep.run
    choice = getattr(prep.renderer, "choice", None)
    from wtb_local.run.record.run_record import checkout, sampling_used  # deferred: start-up
    from wtb_local.run.setup.config import HASHED_FIELDS

    # One place per fact: model, sampling and dataset hash live in `config` (hashed); `settings` holds the
    # other options; `sampling_used` the values the requests were actually sampled with.
    options = {k: v for k, v in settings.model_dump(mode="json").items()
               if k not in HASHED_FIELDS and k != "dataset"}
    for key in URL_SETTINGS:  # a manifest is shared with results: never a password or token it was given
        if isinstance(options.get(key), str):
            options[key] = without_credentials(options[key])
    return {
        "schema_version": SCHEMA_VERSION,  # contract/manifest.py: what a reader of this manifest may rely on
        "wtb_local": checkout(),
        "status": "running",
        "config_hash": config_hash(config),
        "config": config,
        "settings": options,
        "template": choice.model_dump(mode="json") if choice is not None else None,
        "template_note": prep.renderer_note,
        "parser": settings.parser,
        "parser_options": settings.parser_options,
        "template_kwargs": settings.template_kwargs,
        "thinking": prep.thinking.model_dump(mode="json") if prep.thinking is not None else None,
        "sampling_used": sampling_used(settings),
        "max_new_tokens_from": settings.sources.get("sampling.max_new_tokens"),
        "request_seeds": "sha256(f'{seed}/{session_id}/{task_idx}/{step}')[:4] & 0x7fffffff",
        "dataset": {"source": settings.dataset, "path": str(prep.dataset_path),
                    "sessions_in_file": len(prep.sessions), "sessions_selected": len(prep.selected)},
        "files": {"result": str(paths.result_file), "score_dir": str(paths.score_dir)},
        **({"shard": prep.shard} if prep.shard else {}),
        "packages": {k: v for k, v in package_versions().items() if k != "wtb-local"},
        "machine": machine(),
        "invocations": list((previous or {}).get("invocations", [])),
        "protocol": prep.applied.section,
        "versions": run_versions(prep),
        "context_length": prep.context_length,
        "sources": dict(sorted(settings.sources.items())),  # where each value came from (prepare.py)
    }


def run_versions(prep: PreparedRun) -> dict[str, Any]:
    """The versions and constraints a score depends on: the engine and its version, the parser's
    implementation and version, whether decoding was constrained (docs/reproducibility.md)."""
    settings = prep.run
    implementation = getattr(prep.parser, "implementation", "wtb_local") if prep.parser is not None else None
    parser_version = settings.parser_version or (package_versions().get("wtb-local")
                                                 if implementation == "wtb_local" else None)
    return {"engine": prep.backend_class.engine(),
            "parser": {"name": settings.parser, "implementation": implementation, "version": parser_version}}


@dataclass
class InternalLog:
    """What the run's own errors left (docs/reliability.md, "Internal errors"): the completions kept by the
    previous run to reuse, the errors met, the sessions they stopped and how many completions were reused."""

    replay: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[InternalError] = field(default_factory=list)
    broken: list[dict[str, Any]] = field(default_factory=list)
    driver: Any = None

    @property
    def reused(self) -> int:
        return self.driver.reused if self.driver is not None else 0


async def _run_pending(prep: PreparedRun, pending: list[Any], backend: Backend, *, model_name: str,
                       own_backend: bool, store: ResultStore, scheduling: str, stats: ProgressStats,
                       meter: ThroughputMeter, err: Any, stop: StopSignal, audit: Any = None,
                       internal: InternalLog | None = None) -> None:
    from wtb_local.benchmark.evaluator.episode import session_result  # deferred: start-up

    settings = prep.run
    if audit is not None:  # before render workers copy the renderer
        audit.start(prep.renderer)
    pool = _start_pool(prep.renderer, settings.render_workers, err) if backend.needs_prompt else None
    try:
        if own_backend:
            # an engine that loads weights takes minutes on a CPU: say so, with the time (docs/real-model.md)
            mode = settings.progress if backend.capabilities.loads_weights else "none"
            with Loading(mode, f"loading the {backend.name} engine with {settings.model}", err):
                await backend.start()  # the render workers load meanwhile
        if pool is not None:
            pool = await _pool_ready(pool, err)
        if audit is not None:
            audit.pool = pool
    except BaseException:
        if pool is not None:
            pool.close()
        raise
    driver = StepDriver(backend, sampling=settings.sampling, parser=prep.parser, renderer=prep.renderer,
                        meter=meter, pool=pool, audit=audit)
    internal = internal if internal is not None else InternalLog()
    driver.replay, internal.driver = dict(internal.replay), driver
    meter.started = meter.now()  # rates count from the first request, not from engine start
    runner: SessionRunner | None = None
    try:
        with make_progress(settings.progress, stats, err) as progress:
            runner = SessionRunner(driver, store, model_name=model_name, progress=progress,
                                   episodes_for=prep.applied.episodes_for,
                                   session_row=partial(session_result, fresh=False),
                                   label_counts=_label_counts, should_stop=lambda: stop.requested)
            await runner.run(pending, scheduling)
    finally:
        if runner is not None:
            internal.errors, internal.broken = runner.internal_errors, runner.broken
        if pool is not None:
            for note in pool.notes:
                print(f"note: {note}", file=err)
            pool.close()
        if own_backend:
            await backend.close()


async def _pool_ready(pool: Any, err: Any) -> Any:
    """The pool once its workers have loaded the renderer; None, said in one line, when one could not
    (e.g. a tokenizer class the worker cannot import): the prompts are then rendered on the loop."""
    from wtb_local.formats.rendering.pool import PoolError  # deferred: start-up

    try:
        await pool.ready()
    except PoolError as exc:
        pool.close()
        print(f"warning: --render-workers {pool.size}: {exc}; rendering on the event loop", file=err)
        return None
    return pool


def _start_pool(renderer: Any, workers: int, err: Any) -> Any:
    """The run's render workers, started (they load while the engine does); None for none. A renderer that
    cannot be sent to a worker renders on the loop instead, said in one line."""
    if workers < 1 or renderer is None:
        return None
    from wtb_local.formats.rendering.pool import RenderPool  # deferred: start-up

    pool = RenderPool(renderer, workers)
    try:
        pool.start()
    except Exception as exc:  # noqa: BLE001 - e.g. a remote-code tokenizer that does not pickle
        pool.close()
        print(f"warning: --render-workers {workers}: the renderer cannot go to a worker process "
              f"({type(exc).__name__}: {' '.join(str(exc).split())}); rendering on the event loop", file=err)
        return None
    return pool


async def run_job_async(options: RunOptions, *, backend: Backend | None = None, renderer: Any = None,
                        stderr: Any = None, prepared: PreparedRun | None = None) -> RunOutcome:
    """Run, score and write everything for one model. `backend`/`renderer` may be given already built
    (tests and benchmarks share one engine across runs); a given backend is neither started nor closed.
    `prepared`: the run already prepared from `options`. The run directory is locked for the whole run
    (contract/lock_file.py): a second run into it stops with one line naming this one."""
    err = stderr or sys.stderr
    started_at, started = _now(), time.monotonic()
    # Only an engine this run starts gets a context window chosen (a given backend has its own).
    prep = prepared or prepare(options, renderer, err, engine=backend is None)
    with locked(prep.paths.run_dir, err) as lock:
        return await _run_locked(prep, backend, lock, (started_at, started), err)


@dataclass
class _Job:
    """One run in its lock, from the opened record to the closed one: what its phases hand on."""

    prep: PreparedRun
    previous: dict[str, Any] | None  # the manifest of the run resumed (None: a fresh start)
    resumed: bool
    store: ResultStore
    record: RunRecord
    stop: StopSignal
    pending: list[Any]
    skipped: list[str]
    stats: ProgressStats
    meter: ThroughputMeter
    faults: dict[str, Any]  # the backend's fault count when this run began, and the fault that stopped it
    internal: InternalLog
    invocation: dict[str, Any]
    backend: Backend | None
    own_backend: bool
    err: Any
    audit: Any = None
    scheduling: Any = None  # recorded once the backend is built
    measured: Any = None  # the throughput block `figures` last gave the invocation (its summary's too)

    def figures(self) -> dict[str, Any]:
        """The invocation's counters so far (the record writes them at its end, or a second signal's)."""
        self.meter.writer_busy_s = self.store.write_s
        return {"sessions_run": len(self.store.rows) - len(self.skipped),
                "requests": self.stats.requests, "failed_requests": self.stats.failed_requests,
                "prompt_tokens": self.stats.prompt_tokens, "generated_tokens": self.stats.generated_tokens,
                **_fault_log(self.backend).since(self.faults["mark"], self.faults["stopping"]),
                "internal_errors": internal_record.counts(self.internal.errors),
                "completions_reused": self.internal.reused,
                **({"prompt_checks": self.audit.record()} if self.audit is not None else {}),
                "throughput": self._measured()}

    def _measured(self) -> Any:
        self.measured = self.meter.summary(self.stats.tasks_this_run)
        return self.measured


async def _run_locked(prep: PreparedRun, backend: Backend | None, lock: RunLock, start: tuple[str, float],
                      err: Any) -> RunOutcome:
    """The run in its lock, phase by phase: the record opened (resumed or fresh, the invocation `running` on
    disk), the sessions run, their end settled (the result file closed, a stopped run's line raised), the
    result scored, the record closed."""
    job = _open_record(prep, backend, lock, start, err)
    ended = await _run_sessions(job)
    result_rows, kept, broken_file = _settle_sessions(job, ended)
    score_rows, metric = _score(job, result_rows, kept)
    return _close_record(job, result_rows, score_rows, metric, kept, broken_file)


def _open_record(prep: PreparedRun, backend: Backend | None, lock: RunLock, start: tuple[str, float],
                 err: Any) -> _Job:
    """Resume or start afresh, open the result file, then put the invocation on disk as `running`."""
    started_at, started = start
    settings, paths = prep.run, prep.paths
    config = hashed_config(settings)
    resume = check_resume(settings, paths, config)
    previous = read_manifest(paths.run_dir) if resume else None
    manifest = _new_manifest(prep, paths, config, previous)
    # The result file first, then the manifest: a new configuration's manifest never sits beside an older
    # run's results. A store that cannot be opened leaves both as they were.
    store = ResultStore(paths.result_file)
    try:
        store.open(fresh=not resume)
    except RecordError as exc:
        raise RunError(_record_line(exc, len(store.rows), paths.result_file, None)) from exc
    dropped = ResultLines(dropped=store.dropped).note(paths.result_file)
    if dropped:  # what every reader of the file says too (contract/rows.py)
        print(f"warning: {dropped}", file=err)
    finished = store.finished()
    pending = [s for s in prep.selected if s.id not in finished]
    skipped = [s.id for s in prep.selected if s.id in finished]
    if skipped:
        print(f"resuming {paths.run_dir}: {len(skipped)} finished session(s) skipped, {len(pending)} to run",
              file=err)
    stop = current_stop() or StopSignal()  # run_job installs the handlers; a direct caller has none
    record = RunRecord(paths.run_dir, manifest, lock=lock, store=store, stop=stop,
                       result_file=paths.result_file, started=started, err=err)
    # one base for sessions and tasks: the whole run, its finished part counted done
    stats = ProgressStats(len(prep.selected), sum(len(s.english_tasks) for s in prep.selected), len(skipped),
                          sum(len(s.english_tasks) for s in prep.selected if s.id in finished))
    estimate = start_line(prep.run.backend, backend_class(prep.run.backend).capabilities,
                          sum(len(s.english_tasks) for s in pending), prep.run.sampling.max_new_tokens)
    if estimate:  # before the engine loads: how long the run will take (run/loop/estimate.py)
        print(estimate, file=err)
    job = _Job(prep, previous, resume, store, record, stop, pending, skipped, stats, ThroughputMeter(),
               # faults: the backend's count since this run began (a backend given by the caller may have
               # served earlier runs), and the one that stopped it (docs/reliability.md)
               {"mark": _fault_log(backend).snapshot(), "stopping": None},
               # the completions the sessions stopped by an internal error got, reused by this run (internal.py)
               InternalLog(replay=internal_record.read_kept(paths.run_dir) if resume else {}),
               # sessions_scheduled: what this invocation set out to run; sessions_run (at its end): the ones it
               # wrote
               {"started": started_at, "sessions_scheduled": len(pending)},
               backend, backend is None, err)
    record.figures = job.figures
    try:
        record.begin(job.invocation)
    except RecordError as exc:
        _finalize(store)
        raise RunError(_record_line(exc, len(store.rows), paths.result_file, record.unwritten(exc))) from exc
    return job


async def _run_sessions(job: _Job) -> BaseException | None:
    """Build the backend (unless given) and run the pending sessions; the exception that ended them, if any
    (each one recorded by `_settle_sessions`)."""
    prep = job.prep
    try:
        if job.backend is None:
            job.backend = prep.build_backend()
            job.faults["mark"] = _fault_log(job.backend).snapshot()
        job.audit = _prompt_audit(prep, job.backend, job.err)
        job.scheduling = resolve_scheduling(prep.run.scheduling, job.backend)
        job.invocation["scheduling"] = job.scheduling
        job.record.manifest.update(scheduling=job.scheduling)
        if job.pending:
            with job.stop.armed():
                await _run_pending(prep, job.pending, job.backend, model_name=prep.paths.model_name,
                                   own_backend=job.own_backend, store=job.store, scheduling=job.scheduling,
                                   stats=job.stats, meter=job.meter, err=job.err, stop=job.stop, audit=job.audit,
                                   internal=job.internal)
    except (asyncio.CancelledError, Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - each one recorded
        return exc
    return None


def _settle_sessions(job: _Job, ended: BaseException | None) -> tuple[list[dict[str, Any]], int, Path | None]:
    """Every way the sessions end comes here: the result file is closed, the stopped sessions' completions
    kept, and a run that did not finish says how it ended (raising its one line). The result rows, how many
    sessions are kept, and the file of the kept completions."""
    paths, record, stop = job.prep.paths, job.record, job.stop
    with stop.holding():  # a first signal now waits until the record is on disk (stopping.py)
        cause = _first_cause(ended) if ended is not None else None
        if isinstance(cause, Fault):
            job.faults["stopping"] = cause
        record.settle()
        result_rows, store_error = _finalize(job.store)
        if job.backend is not None:
            described = job.backend.describe()
            record.manifest.update(backend=described, rerun=rerun_claim(described, job.scheduling))
        kept = len(job.store.rows)
        broken_file = _keep_broken(paths, job.internal, set(job.store.rows), job.resumed)
        if ended is not None or store_error is not None or stop.requested:
            _end_stopped(record, ended, store_error, stop, kept, paths, job.prep.run.backend)
    return result_rows, kept, broken_file


def _score(job: _Job, result_rows: list[dict[str, Any]],
           kept: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The score rows and metric of the whole result file, written next to it; a scoring that fails closes
    the record with its one line."""
    prep, record, stop = job.prep, job.record, job.stop
    paths = prep.paths
    try:
        return score_run(result_rows, prep.sessions, paths.model_name, paths, checker=prep.protocol.checker)
    except KeyboardInterrupt as exc:
        record.close("interrupted", failure=None)
        raise RunInterrupted(interrupted_line(stop.signal_name or str(exc) or "SIGINT", kept, paths.result_file),
                             stop.signal_name or "") from None
    except RecordError as exc:
        problem = record.close("failed", failure=str(exc))
        raise RunError(_record_line(exc, kept, paths.result_file, problem)) from exc
    except Exception as exc:
        failure = f"scoring: {one_line(exc)}"
        problem = record.close("failed", failure=failure)
        raise RunError(f"scoring the run failed ({one_line(exc)}); {kept} finished session(s) kept in "
                       f"{paths.result_file}" + (f"; {problem}" if problem else "") + ": rerun the same command "
                       "to score them") from exc


def _close_record(job: _Job, result_rows: list[dict[str, Any]], score_rows: list[dict[str, Any]],
                  metric: dict[str, Any], kept: int, broken_file: Path | None) -> RunOutcome:
    """Close the record `failed` (internal errors: exit 3), `complete` or `incomplete` with the run's
    summary, and hand back what the run made."""
    prep, record, internal = job.prep, job.record, job.internal
    settings, paths = prep.run, prep.paths
    if internal.errors:
        line = _internal_line(internal, kept, paths.result_file, broken_file)
        problem = record.close("failed", failure=internal.errors[0].summary())
        raise InternalErrors(line + (f"; {problem}" if problem else ""), INTERNAL_EXIT_CODE)
    complete = {s.id for s in prep.selected} <= {r["id"] for r in result_rows}
    summary = {"sessions_scored": len(score_rows), "task_accuracy": metric["total_info"]["task"],
               "session_accuracy": metric["total_info"]["session"],
               "throughput": _throughput(job.measured, job.pending, job.previous),
               "length_cuts": length_cuts(result_rows)}
    stop = job.stop
    with stop.holding():  # a signal from here on finds the run recorded: exit 0 and one line (stopping.py)
        status = "complete" if complete else "incomplete"
        problem = record.close(status, summary=summary)
        if not problem:
            stop.record_closed(status, paths.run_dir)
    if problem:
        raise RunError(f"the run finished, but {problem}; its files are complete: rerun the same command to "
                       "record it")
    job.stop.raise_held()
    return RunOutcome(paths, settings, metric, score_rows, result_rows, record.manifest, job.skipped,
                      [s.id for s in job.pending], list(prep.sessions))


def _keep_broken(paths: RunPaths, internal: InternalLog, written: set[str], resumed: bool) -> Path | None:
    """The sessions this run's internal errors stopped, with their completions, written for the rerun, and
    those the previous run left that this one neither finished nor reached (a fault or a signal stopped it
    first); the file removed once none is left."""
    broken = list(internal.broken)
    done = written | {row["id"] for row in broken}
    if resumed:
        broken += [row for row in internal_record.read_rows(paths.run_dir) if row["id"] not in done]
    try:
        return internal_record.write_broken(paths.run_dir, broken)
    except OSError:
        return None  # the completions are lost, never a result: the rerun generates them again


def _internal_line(internal: InternalLog, kept: int, result_file: Path, broken_file: Path | None) -> str:
    """The one line of a run whose steps met errors of wtb_local's own code."""
    first = internal.errors[0]
    by_kind = ", ".join(f"{kind} {n}" for kind, n in internal_record.counts(internal.errors).items())
    where = f", their completions kept in {broken_file}" if broken_file is not None else ""
    return (f"{first.summary()}{first.place()}; {len(internal.errors)} step(s) met an error of wtb_local's own "
            f"code ({by_kind}) and none was scored; {len(internal.broken)} session(s) left unfinished{where}; "
            f"{kept} finished session(s) kept in {result_file}: report it with the run's manifest.json; once it "
            "is fixed, rerun the same command to finish them")


def _fault_log(backend: Any) -> FaultLog:
    """The faults the backend retried past; a backend object without a log (none yet, or a benchmark's
    wrapper) retried none."""
    log = getattr(backend, "fault_log", None)
    return log if log is not None else FaultLog()


def _prompt_audit(prep: PreparedRun, backend: Backend, err: Any) -> Any:
    """The run's record of the fast prompt paths' checks (formats/rendering/checks.py; `_run_pending` starts it);
    None when the run's prompts do not go through them."""
    settings = prep.run
    if settings.verify_prompts is None or not backend.needs_prompt:
        return None
    from wtb_local.formats.rendering.checks import PromptAudit, parse_every

    return PromptAudit(parse_every(settings.verify_prompts), settings.on_prompt_mismatch or "reference", err)


def _finalize(store: ResultStore) -> tuple[list[dict[str, Any]], RecordError | None]:
    """The result file closed and sorted: its rows, and the error that stopped a write (the rows are then
    the ones safe on disk)."""
    try:
        return store.finalize(), None
    except RecordError as exc:
        return sorted(store.rows.values(), key=lambda r: session_index(r["id"])), exc


def _end_stopped(record: RunRecord, ended: BaseException | None, store_error: RecordError | None,
                 stop: StopSignal, kept: int, paths: RunPaths, backend_name: str) -> NoReturn:
    """Close the record of a run whose sessions did not all run, and raise its one line."""
    cause = _first_cause(ended) if ended is not None else None
    if store_error is None and isinstance(cause, RecordError):
        store_error = cause
    if store_error is not None:  # the record cannot be trusted to grow: said before anything else
        problem = record.close("failed", failure=str(store_error))
        raise RunError(_record_line(store_error, kept, paths.result_file, problem)) from ended
    if stop.requested or isinstance(cause, KeyboardInterrupt):
        # SIGINT/SIGTERM: episodes stopped or were cancelled (or all had ended); finished sessions stay
        record.close("interrupted")
        name = stop.signal_name or "SIGINT"
        raise RunInterrupted(interrupted_line(name, kept, paths.result_file), name) from None
    if isinstance(cause, asyncio.CancelledError):  # a caller cancelled the run's task
        record.close("interrupted")
        raise cause
    if isinstance(cause, RunError):  # a backend that cannot be built says why in its own line
        record.close("failed", failure=str(cause))
        raise cause
    if isinstance(cause, Fault):  # docs/reliability.md: one line naming the fault and what to do
        problem = record.close("failed", failure=cause.summary())
        raise RunError(stop_line(cause, kept, paths.result_file) + (f"; {problem}" if problem else "")) from ended
    assert cause is not None  # without a cause or a store error, only a signal ends the sessions early (above)
    from wtb_local.formats.rendering.checks import PromptMismatchError
    from wtb_local.formats.rendering.pool import PoolCallbackError  # deferred: start-up

    if isinstance(cause, PromptMismatchError):  # --on-prompt-mismatch stop (docs/runner-speed.md §7)
        problem = record.close("failed", failure=one_line(cause))
        raise RunError(f"{cause}; {kept} finished session(s) kept in {paths.result_file}"
                       + (f"; {problem}" if problem else "")) from ended
    failure = str(cause) if isinstance(cause, LoopError) else one_line(cause)  # a LoopError says what failed
    who = ("render workers" if isinstance(cause, PoolCallbackError)
           else "session loop" if isinstance(cause, LoopError) else f"{backend_name} backend")
    problem = record.close("failed", failure=failure)
    raise RunError(f"the {who} failed, run stopped ({failure}); {kept} finished session(s) kept in "
                   f"{paths.result_file}" + (f"; {problem}" if problem else "") + ": rerun the same command to "
                   "resume") from ended


def _record_line(exc: RecordError, kept: int, result_file: Path, problem: str | None) -> str:
    """The one line of a record that could not be written: which file, why, how many sessions are safe."""
    head = "disk full: " if exc.disk_full else ""
    then = "free space and rerun" if exc.disk_full else "rerun"
    where = "" if exc.path == result_file else f" in {result_file}"
    return (f"{head}{exc}, run stopped; {kept} finished session(s) are safe on disk{where}"
            + (f"; {problem}" if problem else "") + f": {then} the same command to resume")


def _throughput(measured: Any, pending: list[Any], previous: dict[str, Any] | None) -> Any:
    """This invocation's throughput (`measured`); a rerun that ran nothing keeps the figures of the run
    before it."""
    if pending:
        return measured
    recorded = as_manifest(previous)
    earlier = recorded.summary.throughput if recorded is not None else None
    return earlier.written() if earlier else measured


def _first_cause(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups raised by the episode task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def run_job(options: RunOptions, **kwargs: Any) -> RunOutcome:
    """The main job. SIGINT and SIGTERM (SLURM preemption, `kill`) stop it the same way (stopping.py):
    finished sessions are kept, the manifest says "interrupted", and `RunInterrupted` (while sessions ran)
    or KeyboardInterrupt (before) propagates so the caller can say how to resume."""
    with stop_signals_installed():
        return asyncio.run(run_job_async(options, **kwargs))


def replay_run(result_file: str | Path, *, parser: str, dataset: str, out: str | Path, model: Any = None,
               model_name: Any = None, protocol: str | None = None) -> RunOutcome:
    """A recorded run's completions read again through `parser` (`run --backend replay --parser`), into the
    run directory `out`, printing nothing: what `parsers compare` and `explain` hand their reader logic
    (cli/parsers.py, cli/explain.py), so the reader half never starts a run itself."""
    chosen: dict[str, Any] = {"protocol": protocol} if protocol else {}  # else the options' default
    options = RunOptions(backend="replay", replay=str(result_file), model=model, model_name=model_name,
                         parser=parser, dataset=dataset, out=str(out), progress="none", **chosen)
    return asyncio.run(run_job_async(options, stderr=io.StringIO()))


URL_SETTINGS = ("base_url", "mlflow_uri")


def without_credentials(url: str) -> str:
    """`url` as a manifest records it: masked by the one rule (contract/secrets.py: the user-info password
    and credential query values become `***`)."""
    return mask_url(url)
