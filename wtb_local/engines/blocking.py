"""Blocking calls (HTTP requests) off the event loop, in daemon threads.

A pool's worker threads are joined when the interpreter exits, so a run stopped by a signal would wait
for every request still in flight (up to the request timeout) before it could exit. A daemon thread per
call is abandoned instead; the number of calls in flight is bounded by the caller's semaphore.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def in_daemon_thread(call: Callable[[], T], name: str = "wtb-call") -> T:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(value: T | None, error: BaseException | None) -> None:
        if future.done():  # the caller was cancelled meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)  # type: ignore[arg-type]

    def work() -> None:
        try:
            value = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            if not loop.is_closed():
                loop.call_soon_threadsafe(settle, None, exc)
            return
        if not loop.is_closed():
            loop.call_soon_threadsafe(settle, value, None)

    threading.Thread(target=work, name=name, daemon=True).start()
    return await future
