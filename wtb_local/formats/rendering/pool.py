"""Render workers: the next prompt of every episode rendered and tokenised in worker processes.

Rendering a prompt with the model's chat template and tokenising it are most of the runner's own time per
step (docs/runner-speed.md §2), CPU work under the GIL; on the event loop they set the pace of a fast
engine. `RenderPool` hands them to `--render-workers` processes (worker.py), each with its own copy of the
run's `PromptRenderer` (pickled once at start: the same tokenizer, template choice and template variables),
so the loop only sends what changed and reads the prompt back (docs/runner-speed.md §6).

- **Same bytes.** A worker runs the very `render_text` and `encode_prompt` the loop would run, on the same
  messages: prompts and ids are those of in-process rendering (tests/rendering/test_render_pool.py
  compares every prompt of the sample, and whole runs' result files).
- **Only the appended messages travel.** A conversation's messages are never changed once appended
  (Episode.conversation), so for each conversation the pool remembers the message objects a worker has
  and sends only those after them; a conversation whose earlier messages are not the very same objects
  is sent whole. Tool lists go once to each worker.
- **Sticky routing.** All the tasks of a session go to one worker, so its tokeniser reuses the session's
  shared beginning (SegmentEncoder's family); sessions are dealt to workers in the order they first ask.
- **Checked as in-process.** Each worker checks its fast paths under the run's policy (checks.py) and
  sends its counts and any mismatch with the prompt; a mismatch under `--on-prompt-mismatch reference`
  turns that fast path off in every worker (`use_reference`), from its next request on.
- **Errors stay data, faults stop.** A template that raises becomes that step's `render failed: ...`, as
  in-process; a worker that dies is a machine fault (`render_worker_died`, docs/reliability.md): the run
  stops with one line and resumes; nothing finished is lost.
- **Never blocks the loop.** Requests are written without blocking (a full pipe waits for the loop's
  writer callback) and replies are read by a reader callback, so neither side can wait on the other.
  An error inside either callback fails every request waiting on that worker and every later one with a
  `PoolError`, so the run stops with one line instead of waiting forever (docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import os
import pickle
import struct
import subprocess
import sys
import time
from array import array
from pathlib import Path
from typing import Any

from wtb_local.contract.faults import InternalError, RenderWorkerDied
from wtb_local.contract.messages import ChatMessage, ToolSchema

_HEADER = struct.Struct("<I")
START_TIMEOUT_S = 300.0  # importing transformers and unpickling a large tokenizer on a busy node


class RenderFailed(Exception):
    """A rendering that raised in a worker (the template's own error, as in-process)."""


class PoolError(RenderWorkerDied):
    """The pool cannot go on (a worker exited, or never started): a machine fault (wtb_local/contract/faults.py)."""


class PoolCallbackError(RuntimeError):
    """One of the pool's own event-loop callbacks raised: wtb_local's machinery failed, not the machine, so
    the run stops with that error rather than a fault line."""


def pack(message: Any) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def ids_to_bytes(ids: list[int]) -> bytes:
    """Token ids as 4-byte integers: one copy instead of pickling thousands of ints."""
    return array("I", ids).tobytes()


def ids_from_bytes(data: bytes) -> list[int]:
    values = array("I")
    values.frombytes(data)
    return values.tolist()


AUTO_MIN_EPISODES = 64  # below this (the sample has 32) the loop keeps up; a Slurm shard of 1/8 has 128
AUTO_MAX = 8


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def auto_workers(cpus: int, episodes: int) -> int:
    """`--render-workers auto`: none for a small run (each worker imports transformers, about a second of
    CPU, though beside the engine's load) or on one CPU, else one per CPU beside the loop's, up to 8."""
    if episodes < AUTO_MIN_EPISODES or cpus < 2:
        return 0
    return min(AUTO_MAX, cpus - 1)


def resolve_render_workers(given: str, source: str, *, renderer: Any, backend: Any, episodes: int,
                           err: Any) -> tuple[int, str]:
    """The number of render workers and where it came from (the manifest's `sources`). A number given for
    a run whose prompts cannot be rendered in workers is said to change nothing, in one line."""
    renders = bool(getattr(backend.capabilities, "renders_prompts", False)) and \
        bool(getattr(renderer, "renders_in_workers", False))
    if not renders:
        why = ("the backend renders no prompts" if not getattr(backend.capabilities, "renders_prompts", False)
               else f"the {type(renderer).__name__} renders on the event loop only")
        if given != "auto" and int(given) > 0:
            print(f"warning: --render-workers {given} changes nothing: {why}", file=err)
        return 0, why
    if given == "auto":
        cpus = usable_cpus()
        count = auto_workers(cpus, episodes)
        return count, f"auto ({cpus} CPUs, {episodes} episodes)"
    return int(given), source


class _Worker:
    def __init__(self, index: int, process: subprocess.Popen[bytes]) -> None:
        self.index = index
        self.process = process
        self.send_fd = process.stdin.fileno()  # type: ignore[union-attr]
        self.recv_fd = process.stdout.fileno()  # type: ignore[union-attr]
        os.set_blocking(self.send_fd, False)
        os.set_blocking(self.recv_fd, False)
        self.outbox = bytearray()
        self.inbox = bytearray()
        self.writing = False
        self.tools_sent: set[int] = set()
        self.pending: dict[int, asyncio.Future[Any]] = {}


class RenderPool:
    """`workers` render processes for one run's renderer. Use `start()` (awaitable `ready()`), then
    `await build(key, family, messages, tools)` per step, `forget(key)` when a conversation ends, and
    `close()`."""

    def __init__(self, renderer: Any, workers: int) -> None:
        if workers < 1:
            raise ValueError("a render pool needs at least one worker")
        self.renderer = renderer
        self.size = workers
        self.notes: list[str] = []  # the workers' fast-path notes (FastTemplate, SegmentEncoder), once each
        self.loop_s = 0.0  # the loop's own time spent sending requests and reading replies
        self._workers: list[_Worker] = []
        self._route: dict[Any, _Worker] = {}
        self._sent: dict[Any, tuple[_Worker, list[Any]]] = {}
        self._tools: dict[int, tuple[int, Any]] = {}  # id(tools) -> (number, tools): kept alive while known
        self._numbers = 0
        self._failure: str | None = None
        self._failure_type: type[Exception] = PoolError
        self._loop: asyncio.AbstractEventLoop | None = None
        self._check_totals: dict[int, tuple[int, ...]] = {}  # worker -> its latest counts (checks.py)
        self._reference_only: set[str] = set()

    # --- life cycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the processes (they load while the engine does); `ready()` waits for them."""
        self._loop = asyncio.get_running_loop()
        state = pickle.dumps(self.renderer, protocol=pickle.HIGHEST_PROTOCOL)  # PromptRenderer.__getstate__
        # this very wtb_local (a checkout, a wheel, a zip) comes first, whatever the working directory holds
        package_root = str(Path(__file__).resolve().parents[3])
        command = [sys.executable, "-c", (f"import sys; sys.path.insert(0, {package_root!r}); "
                                          "from wtb_local.formats.rendering.worker import main; main()")]
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
        for index in range(self.size):
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
            worker = _Worker(index, process)
            self._workers.append(worker)
            self._loop.add_reader(worker.recv_fd, self._readable, worker)
            ready = self._loop.create_future()
            worker.pending[0] = ready
            self._send(worker, ("init", 0, state))

    @property
    def pids(self) -> list[int]:
        return [worker.process.pid for worker in self._workers]

    async def ready(self) -> None:
        waits = [w.pending[0] for w in self._workers if 0 in w.pending]
        try:
            await asyncio.wait_for(asyncio.gather(*waits), START_TIMEOUT_S)
        except TimeoutError:
            raise PoolError(f"render workers did not start within {START_TIMEOUT_S:.0f} s") from None

    def close(self) -> None:
        for worker in self._workers:
            if self._loop is not None:
                self._loop.remove_reader(worker.recv_fd)
                if worker.writing:
                    self._loop.remove_writer(worker.send_fd)
            for stream in (worker.process.stdin, worker.process.stdout):
                try:
                    stream.close()  # type: ignore[union-attr]
                except OSError:
                    pass
        for worker in self._workers:
            try:
                worker.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
        self._workers = []

    # --- per step ---------------------------------------------------------------------------------------

    async def build(self, key: Any, family: Any, messages: list[ChatMessage],
                    tools: list[ToolSchema] | None) -> tuple[str, list[int], float, float, list[Any]]:
        """(prompt, token ids, render seconds, tokenise seconds, mismatches) of `messages`, rendered by a
        worker exactly as `renderer.render_text` + `renderer.encode_prompt(text, key, family)`, with the
        fast paths' mismatches found building it (checks.Mismatch); raises RenderFailed."""
        started = time.perf_counter()
        if self._failure is not None:
            raise self._failure_type(self._failure)
        worker = self._route.get(family)
        if worker is None:
            worker = self._route[family] = self._workers[len(self._route) % len(self._workers)]
        sent = self._sent.get(key)
        base = 0
        if sent is not None and sent[0] is worker and len(sent[1]) <= len(messages) and \
                all(a is b for a, b in zip(sent[1], messages)):
            base = len(sent[1])
        self._sent[key] = (worker, list(messages))
        number, tools_value = self._tool_number(tools), None
        if number not in worker.tools_sent:
            worker.tools_sent.add(number)
            tools_value = tools
        self._numbers += 1
        request = self._numbers
        future = self._loop.create_future()  # type: ignore[union-attr]
        worker.pending[request] = future
        self._send(worker, ("render", request, key, family, base, messages[base:], number, tools_value))
        self.loop_s += time.perf_counter() - started
        status, *rest = await future
        if status == "error":
            if rest[1] is not None:  # an error of wtb_local's own rendering or tokenising, not the template's
                raise InternalError(*rest[1])
            raise RenderFailed(rest[0])
        text, ids, render_s, tokenise_s, found = rest
        return text, ids, render_s, tokenise_s, found

    def use_reference(self, paths: Any) -> None:
        """Every worker builds `paths` ("rendering", "tokenisation") by the reference path alone from its next
        request on (a mismatch was found: checks.py)."""
        for path in sorted(set(paths) - self._reference_only):
            self._reference_only.add(path)
            if self._failure is None:
                for worker in self._workers:
                    self._send(worker, ("reference", 0, path))

    def check_totals(self) -> list[tuple[int, ...]]:
        """Each worker's counts of the fast paths' checks (checks.PromptChecks.totals), as last reported."""
        return [self._check_totals[index] for index in sorted(self._check_totals)]

    def forget(self, key: Any) -> None:
        """The conversation `key` has ended (its worker drops its messages and token state)."""
        sent = self._sent.pop(key, None)
        if sent is not None and self._failure is None:
            self._send(sent[0], ("forget", 0, key))

    # --- internals --------------------------------------------------------------------------------------

    def _tool_number(self, tools: Any) -> int:
        known = self._tools.get(id(tools))
        if known is not None and known[1] is tools:
            return known[0]
        number = len(self._tools) + 1
        self._tools[id(tools)] = (number, tools)
        return number

    def _send(self, worker: _Worker, message: Any) -> None:
        worker.outbox += pack(message)
        if not worker.writing:
            self._flush(worker)

    def _flush(self, worker: _Worker) -> None:
        try:
            self._write(worker)
        except Exception as exc:  # noqa: BLE001 - a loop callback's error would only be logged: stop instead
            self._broken(worker, "sending it a request", exc)

    def _write(self, worker: _Worker) -> None:
        try:
            while worker.outbox:
                written = os.write(worker.send_fd, worker.outbox)
                del worker.outbox[:written]
        except BlockingIOError:
            pass
        except OSError:  # the worker is gone (a broken pipe): said as its exit, whichever side sees it first
            worker.outbox.clear()
            self._fail(worker, self._exited(worker))
            return
        if worker.outbox and not worker.writing:
            worker.writing = True
            self._loop.add_writer(worker.send_fd, self._flush, worker)  # type: ignore[union-attr]
        elif not worker.outbox and worker.writing:
            worker.writing = False
            self._loop.remove_writer(worker.send_fd)  # type: ignore[union-attr]

    def _readable(self, worker: _Worker) -> None:
        try:
            self._read(worker)
        except Exception as exc:  # noqa: BLE001 - a loop callback's error would only be logged: stop instead
            self._broken(worker, "reading its reply", exc)

    def _broken(self, worker: _Worker, doing: str, exc: Exception) -> None:
        """An error in one of the pool's loop callbacks: that worker is dropped and everything waiting on
        it, and every later request, fails with a PoolCallbackError saying why (docs/reliability.md, "No
        hangs")."""
        for remove, fd in ((self._loop.remove_reader, worker.recv_fd),  # type: ignore[union-attr]
                           (self._loop.remove_writer, worker.send_fd)):  # type: ignore[union-attr]
            try:
                remove(fd)
            except (OSError, ValueError):
                pass
        worker.writing = False
        self._fail(worker, f"render worker {worker.index}: {doing} failed ({type(exc).__name__}: "
                           f"{' '.join(str(exc).split())})", PoolCallbackError)

    def _read(self, worker: _Worker) -> None:
        started = time.perf_counter()
        error: OSError | None
        try:
            data = os.read(worker.recv_fd, 1 << 20)
        except BlockingIOError:
            return
        except OSError as exc:
            data, error = b"", exc
        else:
            error = None
        if not data:
            self._loop.remove_reader(worker.recv_fd)  # type: ignore[union-attr]
            self._fail(worker, self._exited(worker) if error is None else f"render worker {worker.index}: {error}")
            return
        worker.inbox += data
        view, offset = worker.inbox, 0
        while len(view) - offset >= _HEADER.size:
            (length,) = _HEADER.unpack_from(view, offset)
            if len(view) - offset - _HEADER.size < length:
                break
            body = bytes(view[offset + _HEADER.size:offset + _HEADER.size + length])
            offset += _HEADER.size + length
            self._reply(worker, pickle.loads(body))
        del worker.inbox[:offset]
        self.loop_s += time.perf_counter() - started

    def _reply(self, worker: _Worker, message: tuple[Any, ...]) -> None:
        kind, request, *rest = message
        if kind == "note":
            self.notes.append(f"render worker {worker.index}: {rest[0]}")
            return
        if kind == "failed":  # the worker could not start: its reason, to whoever waits for it
            self._fail(worker, f"render worker {worker.index} could not start: {rest[0]}")
            return
        if kind in ("ok", "error"):  # counted even for a request no longer awaited
            self._check_totals[worker.index] = rest[-2] if kind == "ok" else rest[-1]
        future = worker.pending.pop(request, None)
        if future is None or future.done():
            return
        if kind == "ready":
            future.set_result(None)
        elif kind == "ok":
            text, ids, render_s, tokenise_s, _totals, found = rest
            for mismatch in found:
                mismatch.where = f"render worker {worker.index}"
            future.set_result(("ok", text, ids_from_bytes(ids), render_s, tokenise_s, found))
        else:
            future.set_result(("error", rest[0], rest[1]))

    @staticmethod
    def _exited(worker: _Worker) -> str:
        try:  # its pipe is closed: it has exited or is exiting (failure path only, so a short wait is fine)
            code = worker.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        return f"render worker {worker.index} exited (code {code})"

    def _fail(self, worker: _Worker, why: str, kind: type[Exception] = PoolError) -> None:
        if self._failure is None:
            self._failure, self._failure_type = why, kind
        for future in worker.pending.values():
            if not future.done():
                future.set_exception(self._failure_type(self._failure))
        worker.pending.clear()
