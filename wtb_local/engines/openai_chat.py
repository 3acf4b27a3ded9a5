"""Any OpenAI-compatible server through its chat endpoint (`POST {base_url}/chat/completions`).

The conversation and the tools go to the server as they are; the server renders them with its own chat
template and parses the tool calls with its own parser (vLLM's `--tool-call-parser`, SGLang, hosted APIs).
wtb_local only judges the parsed reply. This evaluates an endpoint whose prompts wtb_local cannot render
(no tokenizer at hand), and, next to `--backend openai` on the same server, compares the server's parsing
with wtb_local's. The message text the server returns is recorded as `raw`, the whole message as
`server_message`. Server call ids are replaced by ids derived from the request id with sha256, so the
conversation sent at the next step (and the result file) does not depend on the server's random ids.
"""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar, Required

from typing_extensions import TypedDict

from wtb_local.contract.faults import BadResponse
from wtb_local.contract.messages import ChatMessage, JSONObject, ToolSchema
from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.engines.base import Capabilities, EngineIdentity
from wtb_local.engines.completions import error_completion
from wtb_local.engines.openai_server import OpenAIBackend, StepError, _clip, finish_reason

# The server's finish reasons, as the runner records them.
_FINISH = {"stop": "stop", "tool_calls": "stop", "function_call": "stop", "length": "length"}
_PATH = "/chat/completions"


class ChatBody(TypedDict, total=False):
    """A `/chat/completions` request: the conversation and tools as the episode holds them, the sampling
    values, and the chat template's switches."""

    model: Required[str]
    messages: Required[list[ChatMessage]]
    max_tokens: Required[int]
    seed: Required[int]
    tools: list[ToolSchema]
    tool_choice: str
    temperature: float
    top_p: float
    chat_template_kwargs: dict[str, Any]  # the template's own keyword arguments (--template-kwarg)


class OpenAIChatBackend(OpenAIBackend):
    name = "openai-chat"
    # the server renders with its own template and parses the tool calls itself
    capabilities = Capabilities(
        renders_prompts=False, needs_tokenizer="no", samples=True, replays=False, step_synchronous=False,
        reports_token_usage=True, parses_replies=False, needs_model=True, sampling_from="server", remote=True)
    produces_text = False  # the reply comes parsed by the server
    needs_prompt = False  # the server renders the conversation
    records_raw: ClassVar[bool] = True  # the runner keeps `raw`/`finish_reason`/`server_message`

    def __init__(self, config: Any = None, *, template_kwargs: dict[str, Any] | None = None, **fields: Any) -> None:
        super().__init__(config, **fields)
        # The server samples with its own defaults where the options leave a value unset; `--model` names
        # what it serves (not necessarily a hub id), so no generation_config is read here.
        self.config = self.config.model_copy(update={"generation_config": {}})
        self.template_kwargs = dict(template_kwargs or {})

    @classmethod
    def engine(cls) -> EngineIdentity:
        # the server parses tool calls with its own parser and may constrain decoding (vLLM's strict tool
        # calling): neither is reported in the reply
        return {"name": "a server", "version": "unknown (the server does not report it)",
                "constrained_decoding": "unknown (the server does not report it)"}

    @classmethod
    def from_run(cls, run: Any, *, parser: Any, renderer: Any) -> OpenAIChatBackend:
        # the server renders: the thinking switch goes as chat_template_kwargs
        return cls(cls.config_from_run(run), template_kwargs=run.template_kwargs)

    def chat_body(self, request: GenerationRequest) -> ChatBody:
        body: ChatBody = {
            "model": self.config.request_model,
            "messages": request.messages,
            "max_tokens": request.sampling.max_new_tokens,
            "seed": request.seed,
        }
        if request.tools:
            body["tools"] = request.tools
            body["tool_choice"] = "auto"
        if request.sampling.temperature is not None:
            body["temperature"] = request.sampling.temperature
        if request.sampling.top_p is not None:
            body["top_p"] = request.sampling.top_p
        if self.template_kwargs:  # vLLM and SGLang pass these to the chat template (--thinking and friends)
            body["chat_template_kwargs"] = self.template_kwargs
        return body

    async def generate(self, request: GenerationRequest) -> Completion:
        if not self._started:
            raise RuntimeError("OpenAIChatBackend.generate called before start()")
        started = time.perf_counter()
        body = self.chat_body(request)
        try:
            reply = await self._with_retries(lambda: self._call("POST", _PATH, body))
            return chat_completion(request, reply, started)
        except StepError as exc:
            return error_completion(request, str(exc), started)


def chat_completion(request: GenerationRequest, reply: JSONObject, started: float) -> Completion:
    """The server's parsed message as a reply the episode judges. A message that cannot be judged (a call
    without a function name, content that is not text) is the step's error: the server parsed what the model
    wrote. An answer that holds no message at all is a machine fault (BadResponse)."""
    from wtb_local.benchmark.evaluator.ids import make_call_id  # deferred: start-up

    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadResponse(f"bad response from {_PATH}: no choices: {_clip(json.dumps(reply))}")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise BadResponse(f"bad response from {_PATH}: choices[0].message is not an object")
    finish = finish_reason(choice.get("finish_reason"), _PATH, _FINISH)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise StepError(f"malformed reply from {_PATH}: message.content is not a string")
    reasoning = message.get("reasoning_content", message.get("reasoning"))
    calls = []
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise StepError(f"malformed reply from {_PATH}: tool_calls[{i}] has no function name")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):  # some servers send an object; the evaluator reads JSON text
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append({"id": make_call_id(f"{request.request_id}/{i}"), "type": "function",
                      "function": {"name": function["name"], "arguments": arguments}})
    usage = reply.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    return Completion(
        request_id=request.request_id,
        text=content or "",
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=finish,
        latency_s=time.perf_counter() - started,
        reply={"content": content, "reasoning_content": reasoning if isinstance(reasoning, str) else None,
               "tool_calls": calls or None, "server_message": message},
    )
