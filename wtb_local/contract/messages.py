"""The JSON shapes the pipeline passes around as plain dicts: chat messages, tool calls, tool schemas, and the
result file's session, task and step entries (docs/architecture.md, "Typed shapes").

They are `TypedDict`s, so the values stay the dicts the result file stores byte for byte (docs/evaluation.md
§7) while the checker knows their keys. `JSONObject` is kept for what is truly arbitrary JSON: a model's
tool-call arguments once decoded, a tool's parameter schema as the dataset gives it.
"""

from __future__ import annotations

from typing import Any, NotRequired, Required

# typing_extensions' TypedDict: pydantic builds models from it on Python 3.11 (contract/schema.py)
from typing_extensions import TypedDict

JSONObject = dict[str, Any]  # arbitrary JSON: decoded call arguments, a parameter schema as given


class FunctionSchema(TypedDict, total=False):
    """A tool's function as the dataset declares it (OpenAI's `function` of a tool)."""

    name: Required[str]
    description: str
    parameters: JSONObject


class ToolSchema(TypedDict):
    """One entry of a request's `tools`: `{"type": "function", "function": {...}}`."""

    type: str
    function: FunctionSchema


class CallFunction(TypedDict):
    """The `function` of a tool call: `arguments` is the JSON text (OpenAI's shape); what a model sent is
    kept as it came, so it may be another value, which the evaluator then judges."""

    name: Any
    arguments: Any


class ToolCall(TypedDict, total=False):
    """One entry of an assistant message's `tool_calls`."""

    id: Any
    type: str
    function: Required[CallFunction]


class ChatMessage(TypedDict, total=False):
    """One message of a conversation in OpenAI's shape (system, user, assistant, tool)."""

    role: Required[str]
    content: Any  # text, None on an assistant turn of calls only, or content parts
    reasoning_content: str | None
    tool_calls: list[ToolCall]
    tool_call_id: Any
    name: str
    # The paper protocol's mark on the current task's user message, stripped before a prompt is built
    # (benchmark/protocols/history.py).
    wtb_current_task: bool


class Reply(TypedDict, total=False):
    """A model's reply as the evaluator judges it: the parser's reading of one completion."""

    content: str | None
    tool_calls: list[ToolCall] | None
    reasoning_content: str | None


class StepInput(TypedDict):
    """What was sent at one step (`inference_input`)."""

    messages: list[ChatMessage]
    tools: list[ToolSchema]


class StepOutput(TypedDict, total=False):
    """What the model answered at one step and how it was judged (`inference_output`); runner facts such
    as the step's latency follow the reference's keys in the same dict."""

    reasoning_content: Required[str | None]
    content: Required[Any]
    tool_calls: Required[list[ToolCall] | None]
    current_action_name_label: str
    error_reason: str


class GoldAction(TypedDict):
    """One gold call of a compared candidate: its arguments as the result file stores them (JSON text)."""

    arguments: str
    name: str


class CandidateAnswer(TypedDict, total=False):
    """One candidate the step was compared with (`candidate_N_answer_function_list`); a pseudo-action
    shows its observation and, for an ask, the user's answer."""

    action: Required[list[GoldAction]]
    observation: Any
    user_input: Any


class StepRecord(TypedDict):
    """One `step_N` of a task's `inference_log`."""

    inference_input: StepInput
    inference_output: StepOutput
    inference_answer: NotRequired[dict[str, CandidateAnswer]]


class TaskResult(TypedDict):
    """One task of a result-file line (docs/evaluation.md §7)."""

    action_name_label: str
    is_optimal: bool
    inference_log: dict[str, Any]  # task_idx, begin_of_current_task, then step_0, step_1, ...: StepRecord
    latency: list[float]
    input_token_count: list[int]
    output_token_count: list[int]


class SessionResult(TypedDict):
    """One result-file line: a session's tasks in task order."""

    id: str
    model_name: str
    result: list[TaskResult]
