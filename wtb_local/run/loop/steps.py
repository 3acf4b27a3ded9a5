"""One step of one episode: build its request, turn the engine's completion into a judged reply.

What the model or its conversation did is data: a template that raises while rendering, an over-long
prompt, a request the engine could not serve (an error Completion) or an unreadable tool call becomes an
error on that step with its reason; the other episodes never notice. What the machine did (a backend that
raises: a dead engine, out of memory, a server that is down) is a fault that stops the run before the step
is recorded (wtb_local/contract/faults.py). What wtb_local's own code did (a parser, the renderer outside the
template's code, our tokenising, the judge raising) is an `InternalError`: raised to the session loop, never
recorded as the step's outcome; the completions the session got are kept (`kept_completions`) so that the
rerun reuses them (`replay`) instead of generating them again, as far as the conversation is the same.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from wtb_local.contract.faults import Fault, InternalError, classify, template_side
from wtb_local.contract.messages import ChatMessage, ToolSchema
from wtb_local.contract.schema import Completion, GenerationRequest, ParseResult, SamplingConfig
from wtb_local.engines.base import Backend
from wtb_local.formats.parsers.prefill import STEP_FIELD, decides_per_step, prompt_prefills, step_parser
from wtb_local.run.loop.seeds import request_id, request_seed
from wtb_local.run.loop.throughput import ThroughputMeter


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
        """`pool`: a started RenderPool (formats/rendering/pool.py) for `renderer`: prompts are rendered and
        tokenised in its worker processes, byte for byte as `renderer` would, off the event loop. `audit`:
        the run's PromptAudit (formats/rendering/checks.py), told of every mismatch of the fast prompt paths with
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
        # The completions each session in flight got, kept until it is written: a session stopped by an
        # internal error leaves them to its rerun (docs/reliability.md, "Internal errors"). Every backend's:
        # text to read again, or the reply a server parsed, as it came.
        self._kept: dict[str, list[dict[str, Any]]] = {}
        # The completions a previous run kept, by request id: sent back instead of generating again while
        # every reused step of the task reads back as the reply recorded with it.
        self.replay: dict[str, dict[str, Any]] = {}
        self._replayed: dict[str, Any] = {}  # request id -> the reply recorded with its reused completion
        self._diverged: set[tuple[str, int]] = set()  # tasks whose conversation differs from the recorded one
        self.reused = 0

    def build_request(self, episode: Any) -> tuple[GenerationRequest | None, str | None]:
        """The request for the episode's current step, or (None, reason) when it cannot be built."""
        started = self.meter.now()
        try:
            # A renderer that only reads the conversation (PromptRenderer) gets the episode's own messages;
            # anything else a copy (docs/runner-speed.md §2).
            shared = getattr(self.renderer, "reads_only", False) and hasattr(episode, "conversation")
            messages, tools = episode.conversation() if shared else episode.request()
            rid = request_id(episode.session_id, episode.task_idx, episode.step)
        except Exception as exc:
            raise InternalError.of("step", exc) from exc
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
        from wtb_local.formats.rendering.pool import RenderFailed  # deferred: start-up

        try:
            messages, tools = episode.conversation() if hasattr(episode, "conversation") else episode.request()
            rid = request_id(episode.session_id, episode.task_idx, episode.step)
        except Exception as exc:
            raise InternalError.of("step", exc) from exc
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

    def _request(self, episode: Any, rid: str, messages: list[ChatMessage],
                 tools: list[ToolSchema]) -> GenerationRequest:
        # Built without validation: every field is already of its declared type (a measurable share of
        # a step's time otherwise, docs/runner-speed.md §2).
        try:
            request = GenerationRequest.model_construct(
                request_id=rid, session_id=episode.session_id, task_idx=episode.task_idx, step=episode.step,
                messages=messages, tools=tools, sampling=self.sampling,
                seed=request_seed(self.sampling.seed, episode.session_id, episode.task_idx, episode.step),
                prompt="", prompt_token_ids=None, gold_reply=None,
            )
        except Exception as exc:
            raise InternalError.of("step", exc) from exc
        if self.backend.needs_gold:
            from wtb_local.benchmark.evaluator import gold_replies  # deferred: start-up

            try:
                request.gold_reply = gold_replies.gold_reply(episode)
            except Exception as exc:  # the oracle's gold reply is built here, by our code, not the backend
                raise InternalError.of("gold_reply", exc) from exc
        return request

    def _build(self, episode: Any, rid: str, messages: list[ChatMessage],
               tools: list[ToolSchema], timing: list[float],
               shared: bool = False) -> tuple[GenerationRequest | None, str | None]:
        request = self._request(episode, rid, messages, tools)
        if self.backend.needs_prompt:
            staged = hasattr(self.renderer, "render_text") and hasattr(self.renderer, "encode_prompt")
            try:
                text = (self.renderer.render_text(messages, tools, **({"grows": True} if shared else {}))
                        if staged else None)
            except Exception as exc:  # noqa: BLE001 - the template's refusal fails this step; ours raises
                return None, _render_failed(exc)
            if text is not None:  # staged: rendered as text, tokenised here
                started = self.meter.now()
                # the next prompt of the task extends this one; a task's first, its session's latest
                key = (episode.session_id, episode.task_idx)
                request.prompt = text
                try:
                    request.prompt_token_ids = self.renderer.encode_prompt(text, key, episode.session_id)
                except Exception as exc:
                    raise InternalError.of("tokenizer", exc) from exc
                timing[0] = self.meter.now() - started
                return request, None
            try:
                rendered = self.renderer.render(messages, tools)
            except Exception as exc:  # noqa: BLE001 - the template's refusal fails this step; ours raises
                return None, _render_failed(exc)
            request.prompt = rendered.text
            request.prompt_token_ids = list(rendered.token_ids)
        return request, None

    async def generate(self, request: GenerationRequest) -> Completion:
        """One completion. A backend answers what the model did, a request it cannot serve included, with a
        Completion; whatever it raises is the machine's (wtb_local/contract/faults.py) and stops the run: recording it
        on the step would store an unfinished session as finished and score the machine as the model."""
        kept = self.replay.pop(request.request_id, None)
        if kept is not None and (request.session_id, request.task_idx) not in self._diverged:
            return self._reuse(request, kept)
        try:
            self.meter.request_sent()
        except Exception as exc:
            raise InternalError.of("throughput", exc) from exc
        try:
            completion = await self.backend.generate(request)
        except (Fault, InternalError):  # our tokenising wrapper's error is ours, not the machine's
            self._request_done(None)
            raise
        except Exception as exc:  # a backend's unsorted exception is a fault all the same
            self._request_done(None)
            raise classify(exc) from exc
        except BaseException:  # cancelled: the count still balances
            self._request_done(None)
            raise
        self._request_done(completion, request.session_id)
        return completion

    def _request_done(self, completion: Completion | None, session_id: str = "") -> None:
        """The meter told a request ended. Its error is ours: an internal error keeping the completion the
        request got; when the backend raised already, the backend's error is the one that stands."""
        try:
            self.meter.request_done()
        except Exception as exc:
            if completion is None:
                return
            error = InternalError.of("throughput", exc)
            error.completion = completion
            if completion.error is None:
                self._keep(session_id, completion, dict(completion.reply) if completion.reply is not None else None)
            raise error from exc

    def _reuse(self, request: GenerationRequest, kept: dict[str, Any]) -> Completion:
        """A completion the previous run kept, sent back instead of generated: text-level backends' text
        (read again by the parser), reply-level backends' reply as the server gave it."""
        try:
            completion = Completion(request_id=request.request_id, text=kept["text"],
                                    finish_reason=kept.get("finish_reason") or "stop",
                                    prompt_tokens=kept.get("prompt_tokens") or 0,
                                    completion_tokens=kept.get("completion_tokens") or 0,
                                    latency_s=kept.get("latency_s") or 0.0,
                                    reply=None if self.backend.produces_text else kept.get("reply"))
        except Exception as exc:
            raise InternalError.of("step", exc) from exc
        self.reused += 1
        self._replayed[request.request_id] = kept.get("reply")
        return completion

    def accept(self, episode: Any, request: GenerationRequest | None, completion: Completion | None,
               build_error: str | None = None) -> StepOutcome:
        """Record the step on the episode; returns token counts for progress. The runner's own time for
        the step (render + parse + judge) and the prompt tokens the engine served from its prefix cache
        are recorded on the step (`runner_ms`, `cached_tokens`) and in the throughput meter."""
        # the step met, named as it was before judging moved the episode on
        at = (episode.session_id, episode.task_idx, episode.step)
        try:
            return self._accept_timed(episode, request, completion, build_error)
        except InternalError as exc:
            exc.step = exc.step or at
            exc.completion = exc.completion or completion
            raise
        except Exception as exc:  # the rest of the step's own code (docs/reliability.md, "Internal errors")
            error = InternalError.of("step", exc)
            error.step, error.completion = at, completion
            raise error from exc

    def _accept_timed(self, episode: Any, request: GenerationRequest | None, completion: Completion | None,
                      build_error: str | None) -> StepOutcome:
        started = self.meter.now()
        step = episode.step
        rid = request_id(episode.session_id, episode.task_idx, step)
        self._parse_s = 0.0
        outcome = self._accept(episode, request, completion, build_error)
        parse_s = self._parse_s
        judge_s = self.meter.now() - started - parse_s
        render_s, tokenise_s = self._build_s.pop(rid, (0.0, 0.0))
        cached = completion.cached_tokens if completion is not None else None
        try:
            self.meter.step(render_s=render_s, tokenise_s=tokenise_s, parse_s=parse_s, judge_s=judge_s,
                            prompt_tokens=outcome.prompt_tokens, generated_tokens=outcome.completion_tokens,
                            cached_tokens=cached)
        except Exception as exc:
            raise InternalError.of("throughput", exc) from exc
        total = render_s + tokenise_s + parse_s + judge_s
        try:
            episode.annotate(step, {"runner_ms": round(1000 * total, 3)})
        except Exception as exc:
            raise InternalError.of("annotation", exc) from exc
        if getattr(episode, "done", False) and self.pool is not None:
            self.pool.forget((episode.session_id, episode.task_idx))
        elif getattr(episode, "done", False) and hasattr(self.renderer, "forget"):
            self.renderer.forget((episode.session_id, episode.task_idx))
        return outcome

    def _accept(self, episode: Any, request: GenerationRequest | None, completion: Completion | None,
                build_error: str | None) -> StepOutcome:
        if completion is None:
            self._judge(episode, completion, {"content": "", "tool_calls": None},
                        error_reason=build_error or "no completion")
            return StepOutcome(error=build_error)
        counts = {"latency": completion.latency_s, "input_tokens": completion.prompt_tokens,
                  "output_tokens": completion.completion_tokens}
        outcome = StepOutcome(completion.prompt_tokens, completion.completion_tokens, completion.error)
        extra: dict[str, Any] | None
        if completion.error is not None:
            extra = {"raw": completion.text, "finish_reason": completion.finish_reason}
            self._judge(episode, completion, {"content": "", "tool_calls": None}, error_reason=completion.error,
                           extra=extra, **counts)
            return outcome
        if completion.reply is not None:  # reply-level backend: already parsed, passed as given
            reply = dict(completion.reply)
            extra = None
            if getattr(self.backend, "records_raw", False):  # a server that parsed its own output
                extra = {"raw": completion.text, "finish_reason": completion.finish_reason,
                         "server_message": reply.pop("server_message", None)}
            self._keep(episode.session_id, completion, dict(completion.reply))  # as the server gave it
            self._replayed.pop(completion.request_id, None)  # passed as given: nothing to read back
            self._judge(episode, completion, reply, extra=extra, **counts)
            return outcome
        parse_started = self.meter.now()
        prefilled = self._prefilled(request)
        try:
            result = self._parse(completion, request.tools if request is not None else [], prefilled)
        except Exception as exc:
            error = InternalError.of("parser", exc)
            error.completion = completion
            self._keep(episode.session_id, completion, None)
            raise error from exc
        try:
            reply, error_reason = reply_from_parse(result, completion.request_id, self.id_style)
        except Exception as exc:  # turning the parse into the reply is ours too
            error = InternalError.of("reply", exc)
            error.completion = completion
            self._keep(episode.session_id, completion, None)
            raise error from exc
        self._parse_s = self.meter.now() - parse_started
        extra = {"raw": completion.text, "finish_reason": completion.finish_reason}
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
        self._check_replayed(episode, completion.request_id, reply)
        self._keep(episode.session_id, completion, reply)
        self._judge(episode, completion, reply, error_reason=error_reason, extra=extra, **counts)
        outcome.error = error_reason
        return outcome

    def _judge(self, episode: Any, completion: Completion | None, reply: dict[str, Any], **fields: Any) -> None:
        """`episode.accept`: the judge's exception is an internal error (the completion kept with it)."""
        try:
            episode.accept(reply, **fields)
        except Exception as exc:
            error = InternalError.of("judge", exc)
            error.completion = completion
            raise error from exc

    def _keep(self, session_id: str, completion: Completion, reply: dict[str, Any] | None) -> None:
        """`reply`: for a text-level backend the reply the text was read as (checked when it is reused), for a
        reply-level one the reply as the backend gave it (sent back as it is)."""
        self._kept.setdefault(session_id, []).append(
            {"request_id": completion.request_id, "text": completion.text,
             "finish_reason": completion.finish_reason, "prompt_tokens": completion.prompt_tokens,
             "completion_tokens": completion.completion_tokens, "latency_s": completion.latency_s,
             "reply": reply})

    def _check_replayed(self, episode: Any, rid: str, reply: dict[str, Any]) -> None:
        """A reused completion that reads back as another reply than recorded (the fix changed how it is
        read) changes the rest of its task's conversation: its later completions are generated again."""
        if rid in self._replayed:
            recorded = self._replayed.pop(rid)
            if recorded is None or json.loads(json.dumps(reply)) != recorded:
                self._diverged.add((episode.session_id, episode.task_idx))

    def kept_completions(self, session_id: str) -> list[dict[str, Any]]:
        """The completions a session got so far (handed over, and forgotten here)."""
        return self._kept.pop(session_id, [])

    def forget(self, session_id: str) -> None:
        self._kept.pop(session_id, None)

    def _prefilled(self, request: GenerationRequest | None) -> bool | None:
        """Whether this step's generation prompt opened a reasoning block: read from the rendered prompt,
        else asked of the backend (replay: recorded; oracle: rendered there); None when unknown."""
        if request is None or not decides_per_step(self.parser):
            return None
        if request.prompt:  # empty: the backend renders nothing (replay, oracle)
            return prompt_prefills(request.prompt)
        ask = getattr(self.backend, "prefilled_reasoning", None)
        return ask(request) if ask is not None else None

    def _parse(self, completion: Completion, tools: list[ToolSchema],
               prefilled: bool | None = None) -> ParseResult:
        from wtb_local.formats.parsers import parse_reply

        return parse_reply(step_parser(self.parser, prefilled), completion.text, tools=tools,
                                finish_reason=completion.finish_reason)


def reply_from_parse(result: ParseResult, rid: str,
                     id_style: str = "openai") -> tuple[dict[str, Any], str | None]:
    """The OpenAI-shaped reply of a parse, and the step's error reason when nothing usable came back.

    Calls without an id get a deterministic one keyed by `<request id>/<i>`, so reruns send the same
    conversation (and hit the same prefix cache)."""
    from wtb_local.benchmark.evaluator.ids import make_call_id  # deferred: start-up

    calls = [
        {"id": call.id or make_call_id(f"{rid}/{i}", id_style), "type": "function",
         "function": {"name": call.name, "arguments": call.arguments}}
        for i, call in enumerate(result.tool_calls)
    ]
    reply = {"content": result.content, "reasoning_content": result.reasoning, "tool_calls": calls or None}
    if result.errors and not calls:
        return reply, "parse error: " + "; ".join(_one_line(e) for e in result.errors)
    return reply, None


def _render_failed(exc: Exception) -> str:
    """The step's `render failed` reason when the chat template itself refused (its `raise_exception`, an
    error inside its code); anything else raised while rendering is ours (faults.InternalError)."""
    if not template_side(exc):
        raise InternalError.of("renderer", exc) from exc
    return f"render failed: {type(exc).__name__}: {_one_line(exc)}"


def _one_line(value: Any) -> str:
    return " ".join(str(value).split())
