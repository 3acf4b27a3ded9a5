"""The whole data contract of wtb_local in a few small pydantic models.

Dataset rows (the release schema), parsed model replies, generation requests/completions and run
settings. Evaluator internals work on plain dicts in the OpenAI message shape (that is what the result
file stores byte for byte); these models are the boundaries between the pipeline's stages.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from wtb_local.contract.messages import ChatMessage, Reply, ToolSchema

# --- dataset (docs/evaluation.md §1) ------------------------------------------------------------------------

ASK_ACTION = "ask_user_for_required_parameters"
PREPARE_ACTION = "prepare_to_answer"
PSEUDO_ACTIONS = frozenset({ASK_ACTION, PREPARE_ACTION})


class TaskType(str, Enum):
    SINGLE = "Single-Tool"
    PARALLEL = "Parallel Multi-Tool"
    SEQUENTIAL = "Sequential Multi-Tool"
    MIXED = "Mixed Multi-Tool"
    CLARIFY = "Clarify"
    CHAT = "Chat"


MULTI_TOOL_TYPES = (TaskType.PARALLEL, TaskType.SEQUENTIAL, TaskType.MIXED)


class TurnSubtype(str, Enum):
    COREFERENTIAL = "Coreferential Reference"
    PARTIAL = "Partial Information"
    LONG_RANGE = "Long-Range Dependency"


class Action(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    arguments: Any = Field(default_factory=dict)


class Node(BaseModel):
    """One gold node; `dependency_list` holds positions in the task's node list (`idx` is never read)."""

    model_config = ConfigDict(extra="allow")
    idx: int | None = None
    action: Action
    observation: Any = None
    dependency_list: list[int] = Field(default_factory=list)
    user_input: str | None = None


class Session(BaseModel):
    """One dataset line. Chinese twins and display transcripts are kept as extras and ignored."""

    model_config = ConfigDict(extra="allow")
    id: str
    english_env_info: str
    english_tools: list[dict[str, Any]]
    english_tasks: list[str]
    english_answer_list: list[list[Node]]
    english_task_types: list[TaskType]
    english_turn_subtypes: list[TurnSubtype] = Field(default_factory=list)
    answer_list: list[list[Any]] | None = None

    @property
    def index(self) -> int:
        """N of `wild_tool_bench_N`: the scorer looks sessions up by this suffix."""
        return int(self.id.rsplit("_", 1)[-1])

    def progress_lengths(self) -> list[int]:
        """Per-task gold node counts for the progress rate (Chinese twin, else English)."""
        source = self.answer_list if self.answer_list is not None else self.english_answer_list
        return [len(nodes) for nodes in source]


# --- model replies (docs/evaluation.md §4) ------------------------------------------------------------------


class ParsedCall(BaseModel):
    """A tool call as a parser extracted it. `arguments` is JSON text exactly as the model wrote it for
    JSON-native formats (the checker pairs calls by this text), `json.dumps(obj, ensure_ascii=False)` for
    formats that are not JSON, or the raw unparsable text when the arguments could not be read."""

    id: str | None = None
    name: str
    arguments: str


class FormatDeviation(BaseModel):
    """Tool calls a reply wrote outside the format its parser reads (docs/parser-policies.md §3): `kind` is
    `fenced_json`, `bare_json` or `format:<parser>` (another registered parser's format), `calls` how many
    calls of the step's tools were written so."""

    kind: str
    calls: int


class ParseResult(BaseModel):
    """What a parser returns. Parsers never raise.

    - `errors` empty: a clean parse.
    - `errors` non-empty with `tool_calls`: partially recovered (e.g. a call whose arguments are not JSON
      keeps its raw text); the calls are used, the errors are recorded on the step.
    - `errors` non-empty, no `tool_calls`: the reply attempted a call that could not be read (or was cut
      at the token limit mid-call); the step is recorded as an error with these reasons.
    """

    reasoning: str | None = None
    content: str | None = None
    tool_calls: list[ParsedCall] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    # Calls written inside the reasoning block (docs/parser-policies.md §1): not in `tool_calls` under the
    # release protocol (vLLM drops them too), kept by the paper protocol's rules; counted either way.
    calls_in_reasoning: int = 0
    # Calls written in a foreign wrapper and not read (docs/parser-policies.md §3): filled by
    # `parsers.parse_completion`, recorded on the step, judged as the reply's text (release protocol).
    format_deviation: FormatDeviation | None = None


# --- generation (backends) -------------------------------------------------------------------------------


class SamplingConfig(BaseModel):
    """Sampling settings. `None` means the model's generation_config default (the paper's protocol)."""

    temperature: float | None = None
    top_p: float | None = None
    max_new_tokens: int = 512
    seed: int = 0


class GenerationRequest(BaseModel):
    request_id: str  # "<session id>/<task idx>/<step>": stable across runs
    session_id: str
    task_idx: int
    step: int
    prompt: str = ""  # rendered with the model's chat template (empty for reply-level backends)
    prompt_token_ids: list[int] | None = None
    # The conversation (OpenAI shape) and the converted tools: the episode's own dicts, passed on as they
    # are (validating would rebuild them in the shapes' key order and drop keys the shapes do not name).
    messages: SkipValidation[list[ChatMessage]] = Field(default_factory=list)
    tools: SkipValidation[list[ToolSchema]] = Field(default_factory=list)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    seed: int = 0  # per request, derived with sha256 from (run seed, session, task, step)
    gold_reply: Reply | None = None  # filled only for the oracle backend (after construction: never validated)


class Completion(BaseModel):
    request_id: str
    text: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: Literal["stop", "length", "error"] | str = "stop"
    latency_s: float = 0.0
    error: str | None = None  # a request that could not be served (prompt too long, engine failure)
    cached_tokens: int | None = None  # prompt tokens served from the prefix cache; None: not reported
    # Reply-level backends (scripted) return an already-parsed reply {content, reasoning_content,
    # tool_calls} here instead of text; it skips the parser.
    reply: dict[str, Any] | None = None
