"""The scripted backend: replays already-parsed replies from a script file (the vectors' `script.jsonl`).

Each row is `{"id", "task_idx", "step", "response": {"content", "tool_calls", "reasoning_content"?}}`;
rows with `"step": null` describe how the replies were made (`"policy"`) and are skipped. A step beyond
the script gets an empty reply, which the loop judges as an error (as the reference's replay did).
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar

from wtb_local.contract.jsonl import json_lines
from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.engines.base import Backend, BackendDescription, Capabilities, SetupError, file_sha256

ScriptKey = tuple[str, int, int]


class ScriptError(ValueError):
    """A malformed script line; the message names file, line and field."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_row(path: Path, lineno: int, text: str) -> tuple[ScriptKey, dict[str, Any]] | None:
    where = f"{path}:{lineno}"
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{where}: line: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(row, dict):
        raise ScriptError(f"{where}: line: expected a JSON object, got {type(row).__name__}")
    if "step" not in row:
        raise ScriptError(f"{where}: step: missing")
    if row["step"] is None:
        return None  # a policy row
    for field, check, wanted in (
        ("id", lambda v: isinstance(v, str), "a string"),
        ("task_idx", lambda v: _is_int(v) and v >= 0, "a non-negative integer"),
        ("step", lambda v: _is_int(v) and v >= 0, "a non-negative integer or null"),
    ):
        if field not in row:
            raise ScriptError(f"{where}: {field}: missing")
        if not check(row[field]):
            raise ScriptError(f"{where}: {field}: expected {wanted}, got {row[field]!r}")
    response = row.get("response")
    if not isinstance(response, dict):
        problem = "missing" if "response" not in row else f"expected an object, got {response!r}"
        raise ScriptError(f"{where}: response: {problem}")
    content = response.get("content")
    if content is not None and not isinstance(content, str):
        raise ScriptError(f"{where}: response.content: expected a string or null, got {content!r}")
    reasoning = response.get("reasoning_content")
    if reasoning is not None and not isinstance(reasoning, str):
        raise ScriptError(f"{where}: response.reasoning_content: expected a string or null, got {reasoning!r}")
    tool_calls = response.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        raise ScriptError(f"{where}: response.tool_calls: expected a list or null, got {tool_calls!r}")
    # Calls themselves are replayed as written (a call missing its id is a case the loop must judge).
    reply = {"content": content, "reasoning_content": reasoning, "tool_calls": tool_calls}
    return (row["id"], row["task_idx"], row["step"]), reply


def load_script(path: str | Path) -> dict[ScriptKey, dict[str, Any]]:
    """Replies by (session id, task index, step). Raises ScriptError on a malformed or duplicate row."""
    path = Path(path)
    replies: dict[ScriptKey, dict[str, Any]] = {}
    first_line: dict[ScriptKey, int] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ScriptError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    for lineno, line in json_lines(text):
        parsed = _parse_row(path, lineno, line)
        if parsed is None:
            continue
        key, reply = parsed
        if key in replies:
            raise ScriptError(
                f"{path}:{lineno}: step: duplicate reply for {key[0]} task {key[1]} step {key[2]} "
                f"(first on line {first_line[key]})"
            )
        replies[key] = reply
        first_line[key] = lineno
    return replies


class ScriptedBackend(Backend):
    """Replies from a script file; no model, no prompt rendering, no parser."""

    name: ClassVar[str] = "scripted"
    capabilities: ClassVar[Capabilities] = Capabilities(
        renders_prompts=False, needs_tokenizer="no", samples=False, replays=True, step_synchronous=False,
        reports_token_usage=False, parses_replies=False, sampling_from="none")
    produces_text: ClassVar[bool] = False
    needs_prompt: ClassVar[bool] = False

    def __init__(self, script: str | Path, **_ignored: Any) -> None:
        self.script_path = Path(script)
        self.replies = load_script(self.script_path)

    @classmethod
    def resolve(cls, values: dict[str, Any], sources: dict[str, str], stderr: Any) -> None:
        if not values.get("script"):
            raise SetupError("--backend scripted needs --script FILE")
        values["script_sha256"] = file_sha256(values["script"])

    @classmethod
    def from_run(cls, run: Any, *, parser: Any, renderer: Any) -> ScriptedBackend:
        return cls(run.script)

    def reply_for(self, session_id: str, task_idx: int, step: int) -> dict[str, Any]:
        """The scripted reply, or an empty reply for a step beyond the script (fresh dicts)."""
        reply = self.replies.get((session_id, task_idx, step))
        if reply is None:
            return {"content": "", "reasoning_content": None, "tool_calls": None}
        return copy.deepcopy(reply)

    async def generate(self, request: GenerationRequest) -> Completion:
        reply = self.reply_for(request.session_id, request.task_idx, request.step)
        return Completion(request_id=request.request_id, reply=reply, finish_reason="stop")

    def describe(self) -> BackendDescription:
        digest = hashlib.sha256(self.script_path.read_bytes()).hexdigest()
        return {"backend": self.name, "script": str(self.script_path), "script_sha256": digest}
