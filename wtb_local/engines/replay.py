"""The replay backend: answers every step with the raw completion a finished run recorded for it.

A run's result file keeps each step's raw completion (`raw`), `finish_reason`, token counts and latency,
so the run can be reproduced offline, without a GPU, weights or tokenizer: to re-score it after an
evaluator fix, or to compare tool-call parsers on the same completions. Request `<session>/<task>/<step>`
gets that step's recorded text, which the run's parser and evaluator then judge as if the model had just
written it. A step recorded as a request that was not served (e.g. a prompt too long) is answered with
the same error; a step the recorded run never reached (the conversation diverged, e.g. another parser
accepted a different reply) is answered with an error Completion.

Result files of reply-level backends (scripted) hold parsed replies only, no `raw`: they are refused.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from wtb_local.contract.recorded import (
    ReplayError,
    find_result_file,
    recorded_dataset,
    recorded_manifest,
    replay_parser,
)
from wtb_local.contract.rows import RESULT_KEYS, RowError, read_rows
from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.engines.base import (
    Backend,
    BackendDescription,
    Capabilities,
    RerunClaim,
    SetupError,
    file_sha256,
)

ReplayKey = tuple[str, int, int]  # (session id, task index, step)

_STEP_KEY = re.compile(r"step_(0|[1-9][0-9]*)")


@dataclass(frozen=True)
class RecordedStep:
    """What the recorded run got back for one request."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    error: str | None  # set: the request was not served (no completion to parse)
    prefilled: bool | None = None  # the step's prompt pre-filled a reasoning opening (formats/parsers/prefill.py)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number_at(values: Any, index: int, where: str, field: str, *, integer: bool) -> float:
    """values[index] of a per-step list (0 when the list is absent or shorter)."""
    if values is None:
        return 0
    if not isinstance(values, list):
        raise ReplayError(f"{where}: {field}: expected a list, got {values!r}")
    if index >= len(values):
        return 0
    value = values[index]
    ok = _is_int(value) if integer else isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or value < 0:
        wanted = "a non-negative integer" if integer else "a non-negative number"
        raise ReplayError(f"{where}: {field}[{index}]: expected {wanted}, got {value!r}")
    return value


def _recorded_step(task: dict[str, Any], task_field: str, step: int, entry: Any,
                   where: str) -> tuple[RecordedStep, bool]:
    """The step's recording, and whether it carried a `raw` key at all."""
    field = f"{task_field}.inference_log.step_{step}"
    output = entry.get("inference_output") if isinstance(entry, dict) else None
    if not isinstance(output, dict):
        raise ReplayError(f"{where}: {field}.inference_output: expected an object, got {output!r}")
    raw = output.get("raw")
    if raw is not None and not isinstance(raw, str):
        raise ReplayError(f"{where}: {field}.inference_output.raw: expected a string, got {raw!r}")
    finish = output.get("finish_reason", "stop")
    if not isinstance(finish, str):
        raise ReplayError(f"{where}: {field}.inference_output.finish_reason: expected a string, got {finish!r}")
    error = None
    if raw is None or finish == "error":  # the request was not served: replay its failure
        reason = output.get("error_reason")
        error = reason if isinstance(reason, str) and reason else "the recorded request failed"
    recorded = RecordedStep(
        text=raw or "",
        finish_reason="error" if error is not None else finish,
        prompt_tokens=int(_number_at(task.get("input_token_count"), step, where,
                                     f"{task_field}.input_token_count", integer=True)),
        completion_tokens=int(_number_at(task.get("output_token_count"), step, where,
                                         f"{task_field}.output_token_count", integer=True)),
        latency_s=float(_number_at(task.get("latency"), step, where, f"{task_field}.latency", integer=False)),
        error=error,
        prefilled=_prefilled(output, where, field),
    )
    return recorded, "raw" in output


def _prefilled(output: dict[str, Any], where: str, field: str) -> bool | None:
    from wtb_local.formats.parsers.prefill import STEP_FIELD  # deferred: start-up

    value = output.get(STEP_FIELD)
    if value is not None and not isinstance(value, bool):
        raise ReplayError(f"{where}: {field}.inference_output.{STEP_FIELD}: expected true or false, got {value!r}")
    return value


def _parse_row(path: Path, lineno: int, row: dict[str, Any]) -> tuple[str, list[tuple[ReplayKey, RecordedStep, bool]]]:
    where = f"{path}:{lineno}"
    session_id = row.get("id")
    if not isinstance(session_id, str) or not session_id:
        raise ReplayError(f"{where}: id: expected a session id string, got {session_id!r}")
    tasks = row.get("result")
    if isinstance(tasks, str):  # the reference's crashed session: no completion recorded, every step unrecorded
        return session_id, []
    if not isinstance(tasks, list):
        raise ReplayError(f"{where}: result: expected a list of tasks, got {tasks!r}")
    steps: list[tuple[ReplayKey, RecordedStep, bool]] = []
    for position, task in enumerate(tasks):
        field = f"result[{position}]"
        if not isinstance(task, dict):
            raise ReplayError(f"{where}: {field}: expected an object, got {task!r}")
        log = task.get("inference_log")
        if not isinstance(log, dict):
            raise ReplayError(f"{where}: {field}.inference_log: expected an object, got {log!r}")
        task_idx = log.get("task_idx", position)
        if not _is_int(task_idx) or task_idx < 0:
            raise ReplayError(f"{where}: {field}.inference_log.task_idx: expected a non-negative integer, "
                              f"got {task_idx!r}")
        for key, entry in log.items():
            match = _STEP_KEY.fullmatch(key)
            if match is None:
                continue
            step = int(match.group(1))
            recorded, has_raw = _recorded_step(task, field, step, entry, where)
            steps.append(((session_id, task_idx, step), recorded, has_raw))
    return session_id, steps


def load_recording(path: str | Path) -> dict[ReplayKey, RecordedStep]:
    """Every recorded step of a result file by (session id, task index, step).

    Raises ReplayError on a malformed line, a session recorded twice, an empty file, or a file without any
    raw completion (a reply-level backend's)."""
    path = Path(path)
    try:  # the rule for damaged records (contract/rows.py): an interrupted write's last line dropped
        rows = read_rows(path, keys=RESULT_KEYS)
    except RowError as exc:
        raise ReplayError(str(exc)) from None
    steps: dict[ReplayKey, RecordedStep] = {}
    first_line: dict[str, int] = {}
    any_raw = False
    for lineno, row in rows:
        session_id, recorded = _parse_row(path, lineno, row)
        first_line[session_id] = lineno
        for key, step, has_raw in recorded:
            steps[key] = step
            any_raw = any_raw or has_raw
    if not first_line:
        raise ReplayError(f"{path}: no recorded sessions to replay")
    if not any_raw:
        raise ReplayError(f"{path}: no step records a raw completion (`raw`): a result file of a reply-level "
                          "backend such as scripted holds parsed replies only; rerun those with "
                          "--backend scripted --script FILE")
    return steps


class ReplayBackend(Backend):
    """Raw completions of a finished run, by request id; no model, no prompt rendering."""

    name: ClassVar[str] = "replay"
    capabilities: ClassVar[Capabilities] = Capabilities(
        renders_prompts=False, needs_tokenizer="no", samples=False, replays=True, step_synchronous=False,
        reports_token_usage=True, sampling_from="none")
    produces_text: ClassVar[bool] = True
    needs_prompt: ClassVar[bool] = False  # answers by request id; the prompt is never looked at

    def __init__(self, replay: str | Path, *, model_name: str | None = None, **_ignored: Any) -> None:
        self.result_file = find_result_file(replay, model_name)
        self.steps = load_recording(self.result_file)
        self.sha256 = hashlib.sha256(self.result_file.read_bytes()).hexdigest()
        self.answered = 0
        self.unrecorded = 0  # requests the recorded run never made: the conversation diverged

    async def generate(self, request: GenerationRequest) -> Completion:
        recorded = self.steps.get((request.session_id, request.task_idx, request.step))
        if recorded is None:
            self.unrecorded += 1
            return Completion(request_id=request.request_id, finish_reason="error",
                              error=f"no recorded completion for {request.request_id}")
        self.answered += 1
        return Completion(request_id=request.request_id, text=recorded.text,
                          prompt_tokens=recorded.prompt_tokens, completion_tokens=recorded.completion_tokens,
                          finish_reason=recorded.finish_reason, latency_s=recorded.latency_s,
                          error=recorded.error)

    def prefilled_reasoning(self, request: GenerationRequest) -> bool | None:
        """The recorded step's pre-fill decision (None: not recorded, the run decided it once)."""
        recorded = self.steps.get((request.session_id, request.task_idx, request.step))
        return recorded.prefilled if recorded is not None else None

    @classmethod
    def resolve(cls, values: dict[str, Any], sources: dict[str, str], stderr: Any) -> None:
        """The recorded run decides what the options leave open: the model and its name, the dataset, the
        parser and its options (docs/architecture.md, "prepare"); the replayed file is hashed."""
        source = values.get("replay")
        if not source:
            raise SetupError("--backend replay needs --replay RUN_DIR_OR_RESULT_FILE")
        try:
            manifest = recorded_manifest(source)
        except ReplayError as exc:
            raise SetupError(f"--replay: {exc}") from None
        if manifest is not None:
            config = manifest.config
            if not values.get("model") and config.model:
                values["model"], sources["model"] = config.model, "recorded run"
                if not values.get("model_name"):
                    values["model_name"], sources["model_name"] = config.model_name or config.model, "recorded run"
            dataset = recorded_dataset(manifest)
            if dataset and sources.get("dataset") == "default":
                values["dataset"], sources["dataset"] = dataset, f"recorded run ({source})"
        name = values.get("model_name") or values.get("model")
        try:
            result_file = find_result_file(source, name)
            load_recording(result_file)  # a malformed file is refused before anything is written
        except ReplayError as exc:
            raise SetupError(f"--replay: {exc}") from None
        values["replay"], values["replay_sha256"] = str(result_file), file_sha256(str(result_file))
        # --parser X keeps the recorded options that still apply (the prompt's pre-fill)
        given = values.get("parser")
        values["parser"], values["parser_options"] = replay_parser(result_file, given,
                                                                   values.get("parser_options"))
        if not given and values["parser"]:
            sources["parser"] = "recorded run"

    @classmethod
    def select(cls, values: dict[str, Any], selected: list[Any], stderr: Any) -> list[Any]:
        """Without --sessions/--limit, the sessions the recording holds: a recorded partial run (`--limit 2`)
        would otherwise score every other session as all-error tasks."""
        if values.get("sessions") is not None or values.get("limit") is not None:
            return selected
        recorded = {key[0] for key in load_recording(str(values["replay"]))}
        kept = [session for session in selected if session.id in recorded]
        if len(kept) < len(selected):
            print(f"replay: {len(kept)} of the dataset's {len(selected)} sessions are recorded in "
                  f"{values['replay']}; replaying those (--sessions or --limit choose others)", file=stderr)
        return kept

    @classmethod
    def recorded_thinking(cls, values: dict[str, Any]) -> bool | None:
        try:
            manifest = recorded_manifest(values["replay"]) if values.get("replay") else None
        except ReplayError as exc:
            raise SetupError(f"--replay: {exc}") from None
        return manifest.thinking.effective if manifest is not None else None

    @classmethod
    def rerun_claim(cls, described: Mapping[str, Any], scheduling: str | None) -> RerunClaim:
        return {"identical": True, "why": "the recorded completions are parsed and judged again: the score and "
                                          "metric files are byte-identical, the result file differs only in "
                                          "each step's runner_ms"}

    @classmethod
    def from_run(cls, run: Any, *, parser: Any, renderer: Any) -> ReplayBackend:
        try:
            return cls(run.replay)
        except ValueError as exc:
            raise SetupError(f"--replay: {exc}") from None

    def describe(self) -> BackendDescription:
        return {"backend": self.name, "replay": str(self.result_file), "replay_sha256": self.sha256,
                "recorded_steps": len(self.steps), "answered": self.answered, "unrecorded": self.unrecorded}
