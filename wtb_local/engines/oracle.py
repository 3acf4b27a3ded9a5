"""The oracle backend: answers every step with the gold reply, written as the model family's raw text.

It checks the whole pipeline except the model: the gold reply is written in the native format of the
run's parser — cut out of the family's own chat template (`PromptRenderer.assistant_text`) when a
tokenizer is available, else the parser's `format` — and then goes through the normal parse → judge
path. A correct pipeline scores 100% task, session and optimal-path accuracy with it.
"""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar

from wtb_local.contract.messages import ChatMessage, Reply, ToolCall, ToolSchema
from wtb_local.contract.schema import Completion, GenerationRequest, ParsedCall
from wtb_local.engines.base import Backend, BackendDescription, Capabilities, SetupError


class OracleBackend(Backend):
    name: ClassVar[str] = "oracle"
    # writes the gold replies in the model's format, with its chat template when a tokenizer is on disk
    capabilities: ClassVar[Capabilities] = Capabilities(
        renders_prompts=False, needs_tokenizer="if on disk", samples=False, replays=False,
        step_synchronous=False, reports_token_usage=False, sampling_from="none")
    produces_text: ClassVar[bool] = True
    needs_prompt: ClassVar[bool] = False  # it reads the conversation, not the rendered prompt
    needs_gold: bool = True

    def __init__(self, model: str | None = None, *, parser: Any = None, renderer: Any = None,
                 **_ignored: Any) -> None:
        from wtb_local.formats.parsers import get_parser, select_parser  # deferred: start-up

        if parser is None:
            if not model:
                raise ValueError("oracle backend: give --model (to pick its parser) or --parser")
            parser = select_parser(model)
        self.parser = get_parser(parser) if isinstance(parser, str) else parser
        self.renderer = renderer
        self.model = model
        self.template_cuts = 0  # replies written by cutting the chat template's rendering
        self.format_fallbacks = 0  # replies written by the parser's `format`

    async def generate(self, request: GenerationRequest) -> Completion:
        started = time.perf_counter()
        gold = request.gold_reply
        if gold is None:
            return Completion(request_id=request.request_id, finish_reason="error",
                              error="oracle backend: the request carries no gold reply")
        text = self.write(request.messages, request.tools, gold)
        tokens = len(self.renderer.encode(text)) if self.renderer is not None else 0
        prompt_tokens = len(request.prompt_token_ids or [])
        return Completion(request_id=request.request_id, text=text, prompt_tokens=prompt_tokens,
                          completion_tokens=tokens, finish_reason="stop",
                          latency_s=time.perf_counter() - started)

    def write(self, messages: list[ChatMessage], tools: list[ToolSchema], gold: Reply) -> str:
        """The raw completion for `gold`; the template's cut is used only when it parses back to `gold`."""
        from wtb_local.formats.parsers.prefill import step_parser  # deferred: start-up

        calls = _parsed_calls(gold.get("tool_calls") or [])
        content = gold.get("content")
        prefilled = self._prefilled(messages, tools)
        if self.renderer is not None:
            text = self.renderer.assistant_text(messages, tools, gold)
            if text is not None and self._reads_back(text, tools, content, calls, prefilled):
                self.template_cuts += 1
                return text
        self.format_fallbacks += 1
        writer = step_parser(self.parser, prefilled)  # the parser this step is read with writes it
        if calls:
            return writer.format(content or None, calls)
        return writer.format("" if content is None else str(content), [])

    def prefilled_reasoning(self, request: GenerationRequest) -> bool | None:
        """Whether this step's generation prompt opens a reasoning block (the run parses by it)."""
        return self._prefilled(request.messages, request.tools)

    def _prefilled(self, messages: list[ChatMessage], tools: list[ToolSchema]) -> bool | None:
        from wtb_local.formats.parsers.prefill import decides_per_step, prompt_prefills  # deferred: start-up

        if self.renderer is None or not decides_per_step(self.parser):
            return None
        try:
            return prompt_prefills(self.renderer.render_text(messages, tools))
        except Exception:  # noqa: BLE001 - an unrenderable step is parsed as the run decided once
            return None

    def _reads_back(self, text: str, tools: list[ToolSchema], content: Any,
                    calls: list[ParsedCall], prefilled: bool | None = None) -> bool:
        from wtb_local.formats.parsers import parse_completion  # deferred: start-up
        from wtb_local.formats.parsers.prefill import step_parser  # deferred: start-up

        parsed = parse_completion(step_parser(self.parser, prefilled), text, tools=tools, finish_reason="stop")
        if parsed.errors:
            return False
        if not calls:
            return not parsed.tool_calls and (parsed.content or "").strip() == str(content or "").strip()
        got = sorted((c.name, _json_or_text(c.arguments)) for c in parsed.tool_calls)
        want = sorted((c.name, _json_or_text(c.arguments)) for c in calls)
        return got == want

    @classmethod
    def check(cls, options: Any) -> None:
        if not options.model and not options.parser:
            raise SetupError("--backend oracle needs --model (or --parser) to write replies in a model's format")

    @classmethod
    def from_run(cls, run: Any, *, parser: Any, renderer: Any) -> OracleBackend:
        return cls(run.model, parser=parser, renderer=renderer)

    def describe(self) -> BackendDescription:
        return {"backend": self.name, "parser": self.parser.name,
                "writer": "chat template cut, else parser format" if self.renderer else "parser format",
                "template_cuts": self.template_cuts, "format_fallbacks": self.format_fallbacks}


def _parsed_calls(tool_calls: list[ToolCall]) -> list[ParsedCall]:
    calls = []
    for call in tool_calls:
        function = call.get("function") or {}
        arguments = function.get("arguments", "{}")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        calls.append(ParsedCall(id=call.get("id"), name=function.get("name", ""), arguments=arguments))
    return calls


def _json_or_text(text: str) -> str:
    # Compare arguments as JSON values (canonical text) so key spacing differences do not matter.
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return text
