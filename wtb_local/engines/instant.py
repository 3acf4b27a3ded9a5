"""The instant backend: every step's gold completion, in the model's native format, with no engine at all.

It measures the ceiling the runner itself puts on any engine (docs/runner-speed.md §1): each step still
goes through the real prompt renderer and tokenizer (the backend asks for a prompt), the run's tool-call
parser and the evaluator, and each finished session is written durably; only generation is replaced by
a table lookup. The completion for a request is the oracle's (`OracleBackend.write`: cut out of the chat
template, else the parser's format), so a correct runner scores 100% with it.

Writing a gold reply costs a template rendering and a parse of its own (the oracle's work, not the
runner's), so completions are memoised by request id: a first run fills the table, and `frozen()` gives
a backend that only looks replies up (a request id it has never seen is answered with an error
Completion, never a fresh write), so a benchmark's measured runs time the runner alone.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar

from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.engines.base import Backend, BackendDescription, Capabilities


class InstantBackend(Backend):
    name: ClassVar[str] = "instant"
    # the runner's own ceiling (docs/runner-speed.md §1): every prompt rendered, replies fixed, no engine
    capabilities: ClassVar[Capabilities] = Capabilities(
        renders_prompts=True, needs_tokenizer="yes", samples=False, replays=False, step_synchronous=False,
        reports_token_usage=True, needs_model=True, sampling_from="none")
    produces_text: ClassVar[bool] = True
    needs_prompt: ClassVar[bool] = True  # the point: the runner renders and tokenises every prompt

    def __init__(self, model: str | None = None, *, parser: Any = None, renderer: Any = None,
                 replies: dict[str, tuple[str, int]] | None = None, **_ignored: Any) -> None:
        """`replies`: request id -> (completion text, completion tokens) already written (a frozen table);
        None: write each reply with the oracle on first request and remember it."""
        self.replies: dict[str, tuple[str, int]] = {} if replies is None else replies
        self.frozen_table = replies is not None
        self.needs_gold = not self.frozen_table  # instance value: the step driver plans gold replies only to write
        self.writer = None
        if not self.frozen_table:
            from wtb_local.engines.oracle import OracleBackend  # deferred: start-up

            self.writer = OracleBackend(model, parser=parser, renderer=renderer)
        self.renderer = renderer
        self.lookups = 0
        self.writes = 0

    @classmethod
    def from_run(cls, run: Any, *, parser: Any, renderer: Any) -> InstantBackend:
        return cls(run.model, parser=parser, renderer=renderer)

    def frozen(self) -> InstantBackend:
        """A backend answering from this one's table only (no gold planning, no writing)."""
        return InstantBackend(replies=dict(self.replies))

    async def generate(self, request: GenerationRequest) -> Completion:
        # Answer at once, but as an engine does: after the event loop's other ready work (every other
        # episode's step, the writer's reports), never by running one episode to its end in one go.
        await asyncio.sleep(0)
        started = time.perf_counter()
        prompt_tokens = len(request.prompt_token_ids or [])
        known = self.replies.get(request.request_id)
        if known is None and self.frozen_table:
            return Completion(request_id=request.request_id, prompt_tokens=prompt_tokens, finish_reason="error",
                              error=f"instant backend: no reply recorded for {request.request_id}")
        if known is None:
            if request.gold_reply is None:
                return Completion(request_id=request.request_id, finish_reason="error",
                                  error="instant backend: the request carries no gold reply")
            assert self.writer is not None  # a table that is not frozen has its writer (__init__)
            text = self.writer.write(request.messages, request.tools, request.gold_reply)
            tokens = len(self.renderer.encode(text)) if self.renderer is not None else 0
            known = self.replies[request.request_id] = (text, tokens)
            self.writes += 1
        else:
            self.lookups += 1
        text, tokens = known
        # a looked-up reply took no generation: latency 0, so two runs write identical result lines
        latency = 0.0 if self.frozen_table else time.perf_counter() - started
        return Completion(request_id=request.request_id, text=text, prompt_tokens=prompt_tokens,
                          completion_tokens=tokens, finish_reason="stop", latency_s=latency)

    def prefilled_reasoning(self, request: GenerationRequest) -> bool | None:
        return None  # the step driver reads the pre-fill from the rendered prompt itself

    def describe(self) -> BackendDescription:
        info: BackendDescription = {"backend": self.name, "replies": "frozen table" if self.frozen_table else
                                "oracle writer, memoised", "written": self.writes, "looked_up": self.lookups}
        if self.writer is not None:
            info["parser"] = self.writer.parser.name
            info["template_cuts"] = self.writer.template_cuts
            info["format_fallbacks"] = self.writer.format_fallbacks
        return info
