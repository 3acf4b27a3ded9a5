"""How a step can end: a model outcome (data, recorded on the step and scored), a machine fault (never
recorded on a step; retried where that is safe, else the run stops) or an internal error (an exception in
wtb_local's own code: never recorded on a step, its session left for the rerun, the run ends with exit code
3; `InternalError` at the end). docs/reliability.md has the tables.

The rule is the backend interface itself: `Backend.generate` returns a Completion for whatever the model (or
the request it was given) did, an error Completion included, and raises for whatever the machine did. The
step driver records what is returned and never records what is raised: a raised fault stops the run before
the session it touched is written, so that session is run again by the rerun, and finished sessions stay.

Model outcomes, by `step_ending` (read from a recorded step, so the result file says the same):

- `reply`: a reply, judged right or wrong; `length cut`: a reply ended by the token limit;
- `parse failure`: a reply no tool call could be read from;
- `render failed`: the chat template refused the conversation (its own `raise_exception`); no request;
- `prompt too long`: the prompt does not fit the context window (not sent, or the server's 400 saying so);
- `not served`: any other error Completion (a prompt the tokenizer rejects, an empty prompt, a chat server's
  reply with a call that has no function name, a content filter).

The last three are the run's failed requests (`failed_request`): one number in the progress line, the
warning, the manifest and the result file.

Machine faults are the `Fault` classes below, each with the kind name the manifest counts them by. Grey cases,
decided: a 4xx that does not say the prompt is too long is a request this run built wrong (or a wrong
--model, --api-key, --server-prompt): `request_rejected`, not the model's fault, and no retry would change
it, so the run stops. A server answer that is no completion at all (not JSON, no choices, a generation
ended by `abort`) is `bad_response`. A timeout is not retried: the server may still be working on the
request, and a server that stopped answering would cost a timeout per attempt.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

RERUN = "rerun the same command to resume"

# --- model outcomes ---------------------------------------------------------------------------------------

ENDINGS = ("reply", "length cut", "parse failure", "render failed", "prompt too long", "not served")
FAILED_REQUEST_ENDINGS = frozenset({"render failed", "prompt too long", "not served"})


def step_ending(output: Mapping[str, Any]) -> str:
    """The ending of one recorded step (a result file step's `inference_output`), one of `ENDINGS`."""
    reason = output.get("error_reason")
    reason = reason if isinstance(reason, str) else ""
    if reason.startswith("render failed") or reason == "no completion":
        return "render failed"  # no request was built ("no completion": a request the driver never got)
    if output.get("finish_reason") == "error":
        return "prompt too long" if reason.startswith("prompt too long") else "not served"
    if output.get("finish_reason") == "length":
        return "length cut"
    if reason.startswith("parse error"):
        return "parse failure"
    return "reply"


def failed_request(output: Mapping[str, Any]) -> bool:
    """A step whose request got no reply from the model: it was not built, not sent, or not served."""
    return step_ending(output) in FAILED_REQUEST_ENDINGS


def step_outputs(row: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every recorded step output of one result-file row, in task and step order."""
    tasks = row.get("result")
    for task in tasks if isinstance(tasks, list) else []:
        log = task.get("inference_log") if isinstance(task, dict) else None
        for key, step in (log or {}).items():
            output = step.get("inference_output") if key.startswith("step_") and isinstance(step, dict) else None
            if isinstance(output, dict):
                yield output


def failed_requests(rows: Iterable[Mapping[str, Any]], examples: dict[str, str] | None = None) -> Counter[str]:
    """The failed requests of these result-file rows, by reason with its numbers masked ("prompt too long: N
    tokens > max_model_len N" once, not once per length); `examples` gets each group's first reason as
    written."""
    reasons: Counter[str] = Counter()
    for row in rows:
        for output in step_outputs(row):
            if failed_request(output):
                reason = str(output.get("error_reason") or "unknown")
                reasons[masked(reason)] += 1
                if examples is not None:
                    examples.setdefault(masked(reason), reason)
    return reasons


def masked(reason: str) -> str:
    return re.sub(r"\d+", "N", reason)


_CONTEXT_OVERFLOW = re.compile(
    r"maximum context length|context length|context window|context size|maximum model length|max_model_len"
    r"|prompt is too long|too long to fit|exceeds? the (model'?s? )?(maximum|max)", re.IGNORECASE)


def context_overflow(message: str) -> bool:
    """Whether an engine's or server's refusal says the prompt does not fit the context window (vLLM: "This
    model's maximum context length is ...", "longer than the maximum model length"; SGLang: "longer than the
    model's context length"; llama.cpp: "exceeds the available context size")."""
    return bool(_CONTEXT_OVERFLOW.search(message))


# --- machine faults ---------------------------------------------------------------------------------------


class Fault(RuntimeError):
    """A machine fault: never a step's result. `kind` names it in the manifest's counts; `advice` is what the
    one stop line tells the user to do; `retry`: re-sending the same request is safe and may succeed."""

    kind: ClassVar[str] = "backend_error"
    advice: str = RERUN + "; if it happens again, report it with the run's manifest.json"
    retry: ClassVar[bool] = False

    def __init__(self, detail: str, *, advice: str | None = None, status: int | None = None) -> None:
        self.detail = " ".join(str(detail).split())
        super().__init__(self.detail)
        if advice is not None:
            self.advice = advice
        self.status = status  # the HTTP status, where one came back

    def summary(self) -> str:
        """`machine fault (kind): detail`: the manifest's `failure` and the head of the stop line."""
        return f"machine fault ({self.kind}): {self.detail}"


class BackendError(Fault):
    """A backend raised something this module does not know: still the machine's, never the model's."""


class EngineDied(Fault):
    kind = "engine_died"
    advice = RERUN + " (the engine's own log above says why it died)"


class OutOfMemory(Fault):
    kind = "out_of_memory"
    advice = "free memory (or use smaller batches), then " + RERUN


class DeviceError(Fault):
    kind = "device_error"
    advice = "check the GPU (nvidia-smi), then " + RERUN


class ConnectionFailed(Fault):
    kind = "connection_failed"
    advice = "check that the server is up, then " + RERUN
    retry = True  # refused or reset: the request did not complete, the same seeded request may be sent again


class ServerError(Fault):
    kind = "server_error"
    advice = "check the server's log, then " + RERUN
    retry = True  # 5xx or 429: the server did not answer this request; sending it again is safe


class Timeout(Fault):
    kind = "timeout"
    advice = "check the server (or raise --request-timeout), then " + RERUN


class RequestRejected(Fault):
    kind = "request_rejected"
    advice = "check --model, --server-prompt and --api-key against the server, then " + RERUN


class BadResponse(Fault):
    kind = "bad_response"
    advice = "check that --base-url is an OpenAI-compatible server, then " + RERUN


class RenderWorkerDied(Fault):
    kind = "render_worker_died"
    advice = RERUN


KINDS = tuple(c.kind for c in (EngineDied, OutOfMemory, DeviceError, ConnectionFailed, ServerError, Timeout,
                               RequestRejected, BadResponse, RenderWorkerDied, BackendError))

_DEVICE_MARKERS = ("CUDA error", "CUBLAS_STATUS", "CUDNN_STATUS", "NCCL error", "device-side assert",
                   "HIP error", "an illegal memory access")


def classify(exc: BaseException, *, advice: Mapping[type[Fault], str] | None = None) -> Fault:
    """The fault an engine's exception is. Recognised by class name, so neither torch nor vLLM is imported:
    vLLM's EngineDeadError, torch's OutOfMemoryError (CUDA's and the host's), CUDA/NCCL errors; anything
    else a backend raises is a `backend_error`. `advice`: what a backend says for a kind (e.g. which of its
    options lowers memory)."""
    if isinstance(exc, Fault):
        return exc
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = " ".join(str(exc).split())
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    fault: Fault
    if "EngineDeadError" in names:
        fault = EngineDied(detail)
    elif "OutOfMemoryError" in names or isinstance(exc, MemoryError) or "out of memory" in text.lower():
        fault = OutOfMemory(detail)
    elif "AcceleratorError" in names or any(marker in text for marker in _DEVICE_MARKERS):
        fault = DeviceError(detail)
    elif isinstance(exc, TimeoutError):
        fault = Timeout(detail)
    elif isinstance(exc, ConnectionError):
        fault = ConnectionFailed(detail)
    else:
        fault = BackendError(detail)
    for cls, text_advice in (advice or {}).items():
        if isinstance(fault, cls):
            fault.advice = text_advice
    return fault


def stop_line(fault: Fault, kept: int, result_file: Any) -> str:
    """The one line a run stopped by a fault ends with."""
    return f"{fault.summary()}; run stopped, {kept} finished session(s) kept in {result_file}; {fault.advice}"


@dataclass
class FaultLog:
    """The faults a backend met and got past by retrying (the fault that stops a run is counted by the run).
    Only the event loop touches it."""

    met: Counter[str] = field(default_factory=Counter)  # every failed attempt that was retried, by kind
    recovered: int = 0  # requests answered after at least one retried fault

    def snapshot(self) -> tuple[Counter[str], int]:
        return Counter(self.met), self.recovered

    def since(self, mark: tuple[Counter[str], int], stopped_by: Fault | None = None) -> dict[str, Any]:
        """The manifest's `faults` ({kind: count}, the stopping fault included) and `faults_recovered` since
        `mark`."""
        counts = self.met - mark[0]
        if stopped_by is not None:
            counts[stopped_by.kind] += 1
        return {"faults": dict(sorted(counts.items())), "faults_recovered": self.recovered - mark[1]}


# --- internal errors --------------------------------------------------------------------------------------

# Where in wtb_local's own code a step can fail: reading the reply (parser), building the prompt outside the
# template's own code (renderer), tokenising it in our wrappers (tokenizer), judging the reply (judge),
# turning a parse into the reply (reply), building the oracle's gold reply (gold_reply), annotating the
# judged step (annotation), metering throughput (throughput), and the rest of the step's own code (step:
# reading the episode's conversation, reusing or keeping a completion, counting the step for progress).
INTERNAL_KINDS = ("parser", "renderer", "tokenizer", "judge", "reply", "gold_reply", "annotation", "throughput",
                  "step")
INTERNAL_EXIT_CODE = 3  # the run ended, but steps met an error of ours and were not scored (docs/reliability.md)


def raised_at(exc: BaseException) -> str:
    """`path:line in function` of the innermost frame that raised `exc`: inside wtb_local, the path from the
    package on; elsewhere the file's name."""
    import traceback  # deferred: start-up

    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    if not frames:
        return "unknown place"
    frame = frames[-1]
    path = frame.filename.replace("\\", "/")
    marker = "/wtb_local/"
    shown = "wtb_local/" + path.rsplit(marker, 1)[1] if marker in path else path.rsplit("/", 1)[-1]
    return f"{shown}:{frame.lineno} in {frame.name}"


def template_side(exc: BaseException) -> bool:
    """Whether an exception raised while rendering is the chat template's own: jinja's TemplateError (what
    the template's `raise_exception` raises) or an error raised inside the template's code (a compiled
    `<template>` frame with no wtb_local frame after it). Anything else is a bug of ours or the machine's."""
    if any(cls.__name__ == "TemplateError" and cls.__module__.startswith("jinja2")
           for cls in type(exc).__mro__):
        return True
    import traceback  # deferred: start-up

    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    last_template = max((i for i, f in enumerate(frames) if f.filename == "<template>"), default=None)
    if last_template is None:
        return False
    return not any("/wtb_local/" in f.filename.replace("\\", "/") for f in frames[last_template + 1:])


class InternalError(Exception):
    """An exception in wtb_local's own code on one step (`kind`, one of INTERNAL_KINDS): neither the model's
    outcome nor the machine's fault. The step is never scored; the run finishes the other sessions, keeps
    the touched session's completions for the rerun, and ends with INTERNAL_EXIT_CODE."""

    def __init__(self, kind: str, detail: str, where: str) -> None:
        self.kind = kind
        self.detail = " ".join(str(detail).split())
        self.where = where
        self.step: tuple[str, int, int] | None = None  # (session, task, step), set by the step driver
        self.completion: Any = None  # the completion the step got, when it got one
        super().__init__(self.summary())

    @classmethod
    def of(cls, kind: str, exc: BaseException) -> InternalError:
        if isinstance(exc, InternalError):
            return exc
        text = " ".join(str(exc).split())
        return cls(kind, f"{type(exc).__name__}: {text}" if text else type(exc).__name__, raised_at(exc))

    def summary(self) -> str:
        """`internal error (kind): detail at where`: the manifest's `failure` and the head of the end line."""
        return f"internal error ({self.kind}): {self.detail} at {self.where}"

    def place(self) -> str:
        if self.step is None:
            return ""
        session, task, step = self.step
        return f" (session {session}, task {task}, step {step})"
