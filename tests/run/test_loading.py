"""The start line: what the run loads before its first request, with the elapsed time, even while the
engine's start blocks the event loop (the ticks come from a thread)."""

from __future__ import annotations

import io
import re
import time

import pytest

from wtb_local.run.loop.progress import Loading


def test_plain_loading_lines_count_the_seconds_while_the_caller_blocks() -> None:
    out = io.StringIO()
    with Loading("plain", "loading the vllm engine with /m", out, interval=0.2):
        time.sleep(0.7)  # a blocking start, as vLLM's engine construction is
    lines = out.getvalue().splitlines()
    assert lines[0] == "loading the vllm engine with /m ..."
    ticks = lines[1:-1]
    assert len(ticks) >= 2
    assert all(re.fullmatch(r"loading the vllm engine with /m  elapsed \d+s", line) for line in ticks), ticks
    assert re.fullmatch(r"loading the vllm engine with /m: done in \d+s", lines[-1])


def test_none_is_silent_and_a_failed_start_says_no_done() -> None:
    out = io.StringIO()
    with Loading("none", "x", out, interval=0.01):
        time.sleep(0.05)
    assert out.getvalue() == ""
    with pytest.raises(RuntimeError), Loading("plain", "loading y", out, interval=10):
        raise RuntimeError("engine died")
    assert out.getvalue() == "loading y ...\n"


def test_plain_progress_says_it_is_still_going_while_no_step_finishes() -> None:
    from wtb_local.run.loop.progress import PlainProgress, ProgressStats

    out = io.StringIO()
    progress = PlainProgress(ProgressStats(total_sessions=8, total_tasks=32), out, heartbeat=0.2)
    time.sleep(0.7)  # the first wave of prompts, no step finished yet
    progress.close()
    lines = out.getvalue().splitlines()
    assert len(lines) >= 3  # heartbeats and the final line
    assert all(line.startswith("sessions 0/8  tasks 0/32  acc -") for line in lines)
