"""One render worker process (`worker.main`, started by `RenderPool`, pool.py).

It reads length-prefixed pickles from stdin and answers on the stdout it was started with (anything a
library prints goes to stderr instead, so it cannot corrupt the replies):
  ("init", 0, renderer pickle)                     -> ("ready", 0) or ("failed", 0, reason)
  ("render", n, key, family, base, new, tools#, tools|None)
                                                   -> ("ok", n, text, ids bytes, render s, tokenise s,
                                                       check counts, mismatches)
                                                      or ("error", n, "render failed: Type: message",
                                                          internal, check counts)
  ("forget", 0, key)                               -> nothing
  ("reference", 0, path)                           -> nothing (that fast path off: checks.py)
A conversation is its first `base` messages as last sent plus `new`; `render` is `render_text` then
`encode_prompt(text, key, family)` of the run's own renderer, so the prompt and its ids are the in-process
ones. With each prompt come this worker's counts of the fast paths' checks so far and the mismatches
found building it (checks.py). The fast paths' notes (FastTemplate, SegmentEncoder) are sent once each as
("note", 0, text), ahead of the reply to the request that turned one off (or at once on "reference").
`internal` is None for the template's own refusal, else (kind, detail, where) of an error in wtb_local's
own rendering or tokenising (faults.InternalError: never the step's outcome).
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import time
from typing import Any, BinaryIO

from wtb_local.contract.faults import InternalError, template_side
from wtb_local.formats.rendering.pool import _HEADER, ids_to_bytes, pack


def _internal(kind: str, exc: Exception) -> tuple[str, str, str]:
    error = InternalError.of(kind, exc)
    return error.kind, error.detail, error.where


def _read(stream: BinaryIO) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (length,) = _HEADER.unpack(header)
    body = stream.read(length)
    return pickle.loads(body) if len(body) == length else None


def serve(inbox: BinaryIO, outbox: BinaryIO) -> None:
    def send(message: Any) -> None:
        outbox.write(pack(message))
        outbox.flush()

    first = _read(inbox)
    if first is None:
        return
    try:
        renderer = pickle.loads(first[2])
    except Exception as exc:  # noqa: BLE001 - said to the pool, which refuses to go on
        send(("failed", 0, f"{type(exc).__name__}: {' '.join(str(exc).split())}"))
        return
    gc.freeze()  # the tokenizer and template live as long as the worker: out of every full collection
    send(("ready", 0))
    conversations: dict[Any, list[dict[str, Any]]] = {}
    tools_by_number: dict[int, Any] = {}
    noted: set[str] = set()

    def say_notes() -> None:
        for note in renderer.check_notes():
            if note not in noted:
                noted.add(note)
                send(("note", 0, note))
    clock = time.perf_counter
    while True:
        message = _read(inbox)
        if message is None:
            return
        kind = message[0]
        if kind == "forget":
            conversations.pop(message[2], None)
            renderer.forget(message[2])
            continue
        if kind == "reference":
            renderer.use_reference(message[2])
            say_notes()
            continue
        _, number, key, family, base, new, tools_number, tools = message
        if tools is not None:
            tools_by_number[tools_number] = tools
        messages = conversations.get(key, []) if base else []
        del messages[base:]
        messages.extend(new)
        conversations[key] = messages
        started = clock()
        try:
            text = renderer.render_text(list(messages), tools_by_number[tools_number], grows=True)
        except Exception as exc:  # noqa: BLE001 - the template's refusal fails this step; ours is said as ours
            internal = None if template_side(exc) else _internal("renderer", exc)
            send(("error", number, f"render failed: {type(exc).__name__}: {' '.join(str(exc).split())}",
                  internal, renderer.prompt_checks.totals()))
            continue
        rendered = clock()
        try:
            ids = renderer.encode_prompt(text, key, family)
        except Exception as exc:  # noqa: BLE001 - our tokenising: an internal error of the step
            send(("error", number, "", _internal("tokenizer", exc), renderer.prompt_checks.totals()))
            continue
        tokenised = clock()
        say_notes()  # before the reply: read even when that reply is the run's last
        checks = renderer.prompt_checks
        send(("ok", number, text, ids_to_bytes(ids), rendered - started, tokenised - rendered, checks.totals(),
              checks.take()))


def main() -> None:
    # Ctrl-C and Slurm's SIGTERM reach the whole process group: the run stops itself (stopping.py) and the
    # worker leaves when the run closes its pipe (or dies), not mid-reply with a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    outbox = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # a library's print must not land in the reply stream
    os.dup2(sys.stderr.fileno(), 1)
    try:
        serve(sys.stdin.buffer, outbox)
    except (BrokenPipeError, ConnectionResetError):  # the run closed its end (stopped, or gone): done
        os._exit(0)  # nothing left to flush to a closed pipe


if __name__ == "__main__":
    main()
