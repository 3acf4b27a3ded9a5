"""The scripted backend: lookup, the empty reply beyond the script, clear errors for malformed lines."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from wtb_local.contract.schema import GenerationRequest
from wtb_local.engines import backend_class, get_backend
from wtb_local.engines.scripted import ScriptedBackend, ScriptError, load_script

SCRIPT = Path(__file__).parents[1] / "fixtures" / "vectors" / "sessions" / "script.jsonl"


def _request(session_id: str, task_idx: int, step: int) -> GenerationRequest:
    return GenerationRequest(
        request_id=f"{session_id}/{task_idx}/{step}", session_id=session_id, task_idx=task_idx, step=step
    )


def test_registered_and_reply_level() -> None:
    assert backend_class("scripted") is ScriptedBackend
    backend = get_backend("scripted", script=SCRIPT, model="ignored", seed=3)
    assert backend.produces_text is False and backend.needs_prompt is False and backend.needs_gold is False
    description = backend.describe()
    assert description["backend"] == "scripted" and len(description["script_sha256"]) == 64


def test_lookup_returns_the_scripted_reply() -> None:
    backend = ScriptedBackend(SCRIPT)
    completion = asyncio.run(backend.generate(_request("wild_tool_bench_0", 0, 1)))
    assert completion.request_id == "wild_tool_bench_0/0/1"
    assert completion.finish_reason == "stop" and completion.error is None
    reply = completion.reply
    assert reply is not None and list(reply) == ["content", "reasoning_content", "tool_calls"]
    assert reply["content"] == "Let me check."
    assert reply["reasoning_content"] is None  # absent in the script row
    assert [c["id"] for c in reply["tool_calls"]] == ["call_0_1_0", "extra_1"]
    first = asyncio.run(backend.generate(_request("wild_tool_bench_0", 0, 0))).reply
    assert first == {
        "content": "Sure. rome tokyo london tokyo alpha",
        "reasoning_content": "thinking about step 0",
        "tool_calls": None,
    }


def test_replies_are_fresh_copies() -> None:
    backend = ScriptedBackend(SCRIPT)
    reply = backend.reply_for("wild_tool_bench_0", 0, 1)
    reply["tool_calls"].clear()
    assert backend.reply_for("wild_tool_bench_0", 0, 1)["tool_calls"]


def test_every_row_is_loaded_and_policy_rows_are_skipped() -> None:
    with SCRIPT.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    replies = load_script(SCRIPT)
    assert len(replies) == sum(1 for row in rows if row["step"] is not None)
    assert len(replies) < len(rows)


@pytest.mark.parametrize(("session", "task", "step"), [("wild_tool_bench_0", 0, 99), ("nope", 0, 0)])
def test_beyond_the_script_is_an_empty_reply(session: str, task: int, step: int) -> None:
    reply = asyncio.run(ScriptedBackend(SCRIPT).generate(_request(session, task, step))).reply
    assert reply == {"content": "", "reasoning_content": None, "tool_calls": None}


GOOD = {"id": "s", "task_idx": 0, "step": 0, "response": {"content": "hi", "tool_calls": None}}


def _with(**changes: object) -> str:
    row = {**GOOD, **changes}
    return json.dumps({k: v for k, v in row.items() if v is not _DROP})


_DROP = object()


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("{not json", "line: not valid JSON"),
        ("[1, 2]", "line: expected a JSON object"),
        (_with(step=_DROP), "step: missing"),
        (_with(id=_DROP), "id: missing"),
        (_with(id=3), "id: expected a string"),
        (_with(task_idx="0"), "task_idx: expected a non-negative integer"),
        (_with(task_idx=-1), "task_idx: expected a non-negative integer"),
        (_with(step=True), "step: expected a non-negative integer or null"),
        (_with(response=_DROP), "response: missing"),
        (_with(response="text"), "response: expected an object"),
        (_with(response={"content": 5}), "response.content: expected a string or null"),
        (_with(response={"content": "a", "tool_calls": {}}), "response.tool_calls: expected a list or null"),
        (_with(response={"reasoning_content": ["x"]}), "response.reasoning_content: expected a string or null"),
    ],
)
def test_malformed_lines_name_file_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps(GOOD) + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ScriptError) as info:
        ScriptedBackend(script)
    message = str(info.value)
    assert message.startswith(f"{script}:3: {field}")
    assert "\n" not in message


def test_duplicate_rows_are_refused(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n", encoding="utf-8")
    with pytest.raises(ScriptError, match=r"script.jsonl:2: step: duplicate reply for s task 0 step 0 \(first on line 1\)"):
        load_script(script)


def test_policy_rows_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    policy = {"id": "s", "task_idx": 0, "step": None, "policy": ["optimal"]}
    script.write_text(json.dumps(policy) + "\n   \n" + json.dumps(GOOD) + "\n", encoding="utf-8")
    assert load_script(script) == {("s", 0, 0): {"content": "hi", "reasoning_content": None, "tool_calls": None}}
