"""One step of one episode: build its request, turn the engine's completion into a judged reply.

What the model or its conversation did is data: a template that raises while rendering, an over-long
prompt, a request the engine could not serve (an error Completion) or an unreadable tool call becomes an
error on that step with its reason; the other episodes never notice. What the machine did (a backend that
raises: a dead engine, out of memory, a server that is down) is a fault that stops the run before the step
is recorded (wtb_local/faults.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wtb_local.backends.base import Backend
from wtb_local.faults import Fault, classify
from wtb_local.parsers.prefill import STEP_FIELD, decides_per_step, prompt_prefills, step_parser
from wtb_local.runner.loop.seeds import request_id, request_seed
from wtb_local.runner.loop.throughput import ThroughputMeter
from wtb_local.schema import Completion, GenerationRequest, ParseResult, SamplingConfig


@dataclass
class StepOutcome:
    """What happened at one step, for progress accounting."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None


class StepDriver:
    """Drives one step of an `Episode` through a backend, a renderer and a parser."""

    def __init__(self, backend: Backend, *, sampling: SamplingConfig, parser: Any = None,
                 renderer: Any = None, id_style: str = "openai",
                 meter: ThroughputMeter | None = None, pool: Any = None, audit: Any = None) -> None:
        """`pool`: a started RenderPool (rendering/pool.py) for `renderer`: prompts are rendered and
        tokenised in its worker processes, byte for byte as `renderer` would, off the event loop. `audit`:
        the run's PromptAudit (rendering/checks.py), told of every mismatch of the fast prompt paths with
        the step it was found at."""
        self.backend = backend
        self.audit = audit
        self.meter = meter if meter is not None else ThroughputMeter()
        self.pool = pool if backend.needs_prompt else None
        self.meter.pool = self.pool
        # request id -> (render, tokenise) seconds spent building it, until its step is accepted
        self._build_s: dict[str, tuple[float, float]] = {}
        self.sampling = sampling
        self.parser = parser
        self.renderer = renderer
        self.id_style = id_style
        if backend.produces_text and parser is None:
            raise ValueError(f"backend {backend.name!r} produces text: a tool-call parser is needed")
        if backend.needs_prompt and renderer is None:
            raise ValueError(f"backend {backend.name!r} needs prompts: a prompt renderer is needed")

    def build_request(self, episode: Any) -> tuple[GenerationRequest | None, str | None]:
        """The request for the episode's current step, or (None, reason) when it cannot be built."""
        started = self.meter.now()
        # A renderer that only reads the conversation (PromptRenderer) gets the episode's own messages;
        # anything else a copy (docs/runner-speed.md §2).
        shared = getattr(self.renderer, "reads_only", False) and hasattr(episode, "conversation")
        messages, tools = episode.conversation() if shared else episode.request()
        rid = request_id(episode.session_id, episode.task_idx, episode.step)
        timing = [0.0]  # tokenising time, filled by _build
        try:
            built = self._build(episode, rid, messages, tools, timing, shared)
        finally:
            self._build_s[rid] = (self.meter.now() - started - timing[0], timing[0])
        if self.audit is not None:  # the renderer turned the differing fast path off itself
            self._mismatches(episode, self.renderer.prompt_checks.take())
        return built

    def _mismatches(self, episode: Any, found: list[Any]) -> None:
        if found:
            self.audit.found(found, session=episode.session_id, task=episode.task_idx, step=episode.step)

    async def build(self, episode: Any) -> tuple[GenerationRequest | None, str | None]:
        """`build_request`, with the prompt rendered by the render pool when there is one (awaited while the
        other episodes go on); the request and the reason for a failed rendering are the same."""
        if self.pool is None:
            return self.build_request(episode)
        from wtb_local.rendering.pool import RenderFailed  # deferred: start-up

        messages, tools = episode.conversation() if hasattr(episode, "conversation") else episode.request()
        rid = request_id(episode.session_id, episode.task_idx, episode.step)
        request = self._request(episode, rid, messages, tools)
        try:
            text, ids, render_s, tokenise_s, found = await self.pool.build(
                (episode.session_id, episode.task_idx), episode.session_id, messages, tools)
        except RenderFailed as exc:
            self._build_s[rid] = (0.0, 0.0)
            return None, str(exc)
        if found:  # the worker returned the reference's prompt; the other workers follow it from now on
            if self.audit is not None:
                self._mismatches(episode, found)
            self.pool.use_reference(m.path for m in found)
        self._build_s[rid] = (render_s, tokenise_s)  # the worker's time: off the loop (throughput.py)
        request.prompt, request.prompt_token_ids = text, ids
        return request, None

    def _request(self, episode: Any, rid: str, messages: list[dict[str, Any]],
                 tools: list[dict[str, Any]]) -> GenerationRequest:
        # Built without validation: every field is already of its declared type (a measurable share of
        # a step's time otherwise, docs/runner-speed.md §2).
        request = GenerationRequest.model_construct(
            request_id=rid, session_id=episode.session_id, task_idx=episode.task_idx, step=episode.step,
            messages=messages, tools=tools, sampling=self.sampling,
            seed=request_seed(self.sampling.seed, episode.session_id, episode.task_idx, episode.step),
            prompt="", prompt_token_ids=None, gold_reply=None,
        )
        if self.backend.needs_gold:
            from wtb_local.evaluator.gold_replies import gold_reply  # deferred: start-up

            request.gold_reply = gold_reply(episode)
        return request

    def _build(self, episode: Any, rid: str, messages: list[dict[str, Any]],
               tools: list[dict[str, Any]], timing: list[float],
               shared: bool = False) -> tuple[GenerationRequest | None, str | None]:
        request = self._request(episode, rid, messages, tools)
        if self.backend.needs_prompt:
            staged = hasattr(self.renderer, "render_text") and hasattr(self.renderer, "encode_prompt")
            try:
                text = (self.renderer.render_text(messages, tools, **({"grows": True} if shared else {}))
                        if staged else None)
            except Exception as exc:  # noqa: BLE001 - a template's raise_exception fails this step only
                return None, f"render failed: {type(exc).__name__}: {_one_line(exc)}"
            if staged:
                started = self.meter.now()
                # the next prompt of the task extends this one; a task's first, its session's latest
                key = (episode.session_id, episode.task_idx)
                request.prompt = text
                request.prompt_token_ids = self.renderer.encode_prompt(text, key, episode.session_id)
                timing[0] = self.meter.now() - started
                return request, None
            try:
                rendered = self.renderer.render(messages, tools)
            except Exception as exc:  # noqa: BLE001 - a template's raise_exception fails this step only
                return None, f"render failed: {type(exc).__name__}: {_one_line(exc)}"
            request.prompt = rendered.text
            request.prompt_token_ids = list(rendered.token_ids)
        return request, None

    async def generate(self, request: GenerationRequest) -> Completion:
        """One completion. A backend answers what the model did, a request it cannot serve included, with a
        Completion; whatever it raises is the machine's (wtb_local/faults.py) and stops the run: recording it
        on the step would store an unfinished session as finished and score the machine as the model."""
        self.meter.request_sent()
        try:
            return await self.backend.generate(request)
        except Fault:
            raise
        except Exception as exc:  # a backend's unsorted exception is a fault all the same
            raise classify(exc) from exc
        finally:
            self.meter.request_done()

    def accept(self, episode: Any, request: GenerationRequest | None, completion: Completion | None,
               build_error: str | None = None) -> StepOutcome:
        """Record the step on the episode; returns token counts for progress. The runner's own time for
        the step (render + parse + judge) and the prompt tokens the engine served from its prefix cache
        are recorded on the step (`runner_ms`, `cached_tokens`) and in the throughput meter."""
        started = self.meter.now()
        step = episode.step
        rid = request_id(episode.session_id, episode.task_idx, step)
        self._parse_s = 0.0
        outcome = self._accept(episode, request, completion, build_error)
        parse_s = self._parse_s
        judge_s = self.meter.now() - started - parse_s
        render_s, tokenise_s = self._build_s.pop(rid, (0.0, 0.0))
        cached = completion.cached_tokens if completion is not None else None
        self.meter.step(render_s=render_s, tokenise_s=tokenise_s, parse_s=parse_s, judge_s=judge_s,
                        prompt_tokens=outcome.prompt_tokens, generated_tokens=outcome.completion_tokens,
                        cached_tokens=cached)
        total = render_s + tokenise_s + parse_s + judge_s
        episode.annotate(step, {"runner_ms": round(1000 * total, 3)})
        if getattr(episode, "done", False) and self.pool is not None:
            self.pool.forget((episode.session_id, episode.task_idx))
        elif getattr(episode, "done", False) and hasattr(self.renderer, "forget"):
            self.renderer.forget((episode.session_id, episode.task_idx))
        return outcome

    def _accept(self, episode: Any, request: GenerationRequest | None, completion: Completion | None,
                build_error: str | None) -> StepOutcome:
        if completion is None:
            episode.accept({"content": "", "tool_calls": None}, error_reason=build_error or "no completion")
            return StepOutcome(error=build_error)
        counts = {"latency": completion.latency_s, "input_tokens": completion.prompt_tokens,
                  "output_tokens": completion.completion_tokens}
        outcome = StepOutcome(completion.prompt_tokens, completion.completion_tokens, completion.error)
        if completion.error is not None:
            extra = {"raw": completion.text, "finish_reason": completion.finish_reason}
            episode.accept({"content": "", "tool_calls": None}, error_reason=completion.error,
                           extra=extra, **counts)
            return outcome
        if completion.reply is not None:  # reply-level backend: already parsed, passed as given
            reply = dict(completion.reply)
            extra = None
            if getattr(self.backend, "records_raw", False):  # a server that parsed its own output
                extra = {"raw": completion.text, "finish_reason": completion.finish_reason,
                         "server_message": reply.pop("server_message", None)}
            episode.accept(reply, extra=extra, **counts)
            return outcome
        parse_started = self.meter.now()
        prefilled = self._prefilled(request)
        result = self._parse(completion, request.tools if request is not None else [], prefilled)
        reply, error_reason = reply_from_parse(result, completion.request_id, self.id_style)
        self._parse_s = self.meter.now() - parse_started
        extra: dict[str, Any] = {"raw": completion.text, "finish_reason": completion.finish_reason}
        if prefilled is not None and decides_per_step(self.parser):  # a replay parses this step the same way
            extra[STEP_FIELD] = prefilled
        if completion.cached_tokens is not None:
            extra["cached_tokens"] = completion.cached_tokens
        if result.errors:
            extra["parse_errors"] = list(result.errors)
        if result.calls_in_reasoning:  # docs/parser-policies.md §1: counted in run health
            extra["calls_in_reasoning"] = result.calls_in_reasoning
        if result.format_deviation is not None:  # docs/parser-policies.md §3: counted in run health
            extra["format_deviation"] = result.format_deviation.model_dump()
        episode.accept(reply, error_reason=error_reason, extra=extra, **counts)
        outcome.error = error_reason
        return outcome

    def _prefilled(self, request: GenerationRequest | None) -> bool | None:
        """Whether this step's generation prompt opened a reasoning block: read from the rendered prompt,
        else asked of the backend (replay: recorded; oracle: rendered there); None when unknown."""
        if request is None or not decides_per_step(self.parser):
            return None
        if request.prompt:  # empty: the backend renders nothing (replay, oracle)
            return prompt_prefills(request.prompt)
        ask = getattr(self.backend, "prefilled_reasoning", None)
        return ask(request) if ask is not None else None

    def _parse(self, completion: Completion, tools: list[dict[str, Any]],
               prefilled: bool | None = None) -> ParseResult:
        from wtb_local.parsers import parse_completion

        return parse_completion(step_parser(self.parser, prefilled), completion.text, tools=tools,
                                finish_reason=completion.finish_reason)


def reply_from_parse(result: ParseResult, rid: str,
                     id_style: str = "openai") -> tuple[dict[str, Any], str | None]:
    """The OpenAI-shaped reply of a parse, and the step's error reason when nothing usable came back.

    Calls without an id get a deterministic one keyed by `<request id>/<i>`, so reruns send the same
    conversation (and hit the same prefix cache)."""
    from wtb_local.evaluator.ids import make_call_id  # deferred: start-up

    calls = [
        {"id": call.id or make_call_id(f"{rid}/{i}", id_style), "type": "function",
         "function": {"name": call.name, "arguments": call.arguments}}
        for i, call in enumerate(result.tool_calls)
    ]
    reply = {"content": result.content, "reasoning_content": result.reasoning, "tool_calls": calls or None}
    if result.errors and not calls:
        return reply, "parse error: " + "; ".join(_one_line(e) for e in result.errors)
    return reply, None


def _one_line(value: Any) -> str:
    return " ".join(str(value).split())
