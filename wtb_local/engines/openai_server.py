"""Any OpenAI-compatible server through its text completions endpoint (`POST {base_url}/completions`).

The prompt is rendered by wtb_local and the reply parsed by wtb_local, so the server only generates:
results do not depend on the server's chat template or tool parser. The prompt goes out as the renderer's
token ids (vLLM and SGLang accept a list of ids as `prompt`), exactly what the in-process engines get; a
server that takes only text gets the text with `add_special_tokens: false`, so it does not add a second
BOS. Sampling is sent in full, resolved from the checkpoint's generation_config exactly as the in-process
backends resolve it (sampling_defaults.py), so a server's own defaults never decide it. Requests run
concurrently (bounded by `max_concurrency`) over `urllib`, each in a daemon thread (no HTTP dependency).

What goes wrong is sorted once (wtb_local/contract/faults.py, docs/reliability.md): a 4xx that says the prompt does
not fit the context window is the step's `prompt too long`; everything else is a machine fault. Refused or
reset connections, 429 and 5xx are retried with exponential backoff, a bounded number of times: each request
carries its own seed (or is greedy), so the same request sent again asks for the same reply, and the server
served nothing of it. A timeout, any other 4xx and an answer that is no completion stop the run.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any, Required

from typing_extensions import TypedDict

from wtb_local.contract.faults import (
    BadResponse,
    ConnectionFailed,
    Fault,
    RequestRejected,
    ServerError,
    Timeout,
    context_overflow,
)
from wtb_local.contract.messages import JSONObject
from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.engines.base import Backend, BackendDescription, Capabilities, EngineIdentity, SetupError
from wtb_local.engines.blocking import in_daemon_thread
from wtb_local.engines.completions import error_completion, prompt_too_long
from wtb_local.engines.config import OpenAIConfig
from wtb_local.engines.sampling_defaults import ResolvedSampling, model_defaults, resolve
from wtb_local.engines.server_url import ServerURL

_DETAIL_CHARS = 300


class CompletionBody(TypedDict, total=False):
    """A `/completions` request: the rendered prompt (text or token ids) and the sampling values, with
    vLLM's extensions (ignored elsewhere)."""

    model: Required[str]
    prompt: Required[str | list[int]]
    add_special_tokens: bool
    max_tokens: int
    seed: int
    temperature: float
    top_p: float
    top_k: int
    min_p: float
    repetition_penalty: float
    skip_special_tokens: bool
    spaces_between_special_tokens: bool


class StepError(Exception):
    """What the server said about this request that is the step's outcome, not the machine's (a prompt too
    long for its context window, a reply that cannot be judged): recorded on the step as an error."""


class OpenAIBackend(Backend):
    name = "openai"
    # the tokenizer renders the prompts here; the server generates
    capabilities = Capabilities(
        renders_prompts=True, needs_tokenizer="yes", samples=True, replays=False, step_synchronous=False,
        reports_token_usage=True, needs_model=True, remote=True,
        packages=(("transformers",), "hf"))

    def __init__(self, config: OpenAIConfig | None = None, **fields: Any) -> None:
        self.config = config if config is not None else OpenAIConfig(**fields)
        # what each request sends (credentials in the URL included) and what messages show (masked)
        self._url = ServerURL.parse(self.config.base_url, self.config.api_key)
        self._base = self._url.shown
        self._semaphore: asyncio.Semaphore | None = None
        self._started = False
        self._server_models: list[str] = []
        self._defaults: dict[str, Any] = {}
        self._max_model_len: int | None = self.config.max_model_len

    async def start(self) -> None:
        self._started = True
        self._semaphore = asyncio.Semaphore(self.config.max_concurrency)
        try:
            # One attempt: a refused connection here means no server (or one still loading), and backing off
            # would only delay the error; retries are for requests to a server that was up.
            listing = await self._with_retries(lambda: self._call("GET", "/models", None), retries=0)
        except (Fault, StepError) as exc:
            if getattr(exc, "status", None) != 404:  # a server without a model listing can still serve
                raise RuntimeError(f"OpenAI server at {self._base} is not usable: {self._url.mask(str(exc))}; "
                                   "start it first and "
                                   "wait until it is ready") from None
            listing = {}
        models = [m for m in listing.get("data", []) if isinstance(m, dict)]
        self._server_models = sorted(str(m.get("id")) for m in models)
        name = self.config.request_model
        if self._server_models and name not in self._server_models:  # every request would be refused
            flag = "--served-model-name" if self.config.served_model_name else "--model"
            raise RuntimeError(f"OpenAI server at {self._base} serves {', '.join(self._server_models)}, not {name!r} "
                               f"({flag}); pass the served name as --served-model-name (--model names the "
                               "checkpoint)")
        if self._max_model_len is None:  # vLLM lists each model's context window
            served = [m.get("max_model_len") for m in models if m.get("id") == name]
            if served and isinstance(served[0], int) and served[0] > 0:
                self._max_model_len = served[0]
        # The checkpoint's sampling defaults, read here and sent with every request (after the server
        # check, so a missing server is reported first).
        generation_config = self.config.generation_config
        if generation_config is None:
            from wtb_local.engines.generation_config import GenerationConfigError, read_generation_config

            try:
                generation_config = await asyncio.to_thread(read_generation_config, self.config.model,
                                                            self.config.revision)
            except GenerationConfigError as exc:
                raise RuntimeError(str(exc)) from None
        self._defaults = model_defaults(generation_config)

    async def close(self) -> None:
        self._started = False  # calls still in flight run out in their daemon threads

    def _body(self, request: GenerationRequest, sampling: ResolvedSampling) -> CompletionBody:
        if self.config.prompt_format == "token-ids" and request.prompt_token_ids is not None:
            body: CompletionBody = {"model": self.config.request_model, "prompt": list(request.prompt_token_ids)}
        else:
            # The chat template already wrote BOS and every marker: the server must add nothing.
            body = {"model": self.config.request_model, "prompt": request.prompt, "add_special_tokens": False}
        body["max_tokens"] = sampling.max_new_tokens
        body["seed"] = request.seed
        body["temperature"] = sampling.temperature  # 0 = greedy
        body["top_p"] = sampling.top_p
        body["top_k"] = sampling.top_k if sampling.top_k > 0 else -1  # -1 = off, as the vllm backend sends it
        body["min_p"] = sampling.min_p
        body["repetition_penalty"] = sampling.repetition_penalty
        # vLLM extensions (ignored elsewhere): keep tool-call markers, decode exactly.
        body["skip_special_tokens"] = False
        body["spaces_between_special_tokens"] = False
        return body

    async def generate(self, request: GenerationRequest) -> Completion:
        if not self._started:
            raise RuntimeError("OpenAIBackend.generate called before start()")
        started = time.perf_counter()
        max_tokens = request.sampling.max_new_tokens
        limit = self._max_model_len
        if limit is not None and request.prompt_token_ids is not None:
            n_prompt = len(request.prompt_token_ids)
            if n_prompt + 1 > limit:
                return prompt_too_long(request, n_prompt, limit, started)
            max_tokens = min(max_tokens, limit - n_prompt)
        body = self._body(request, resolve(request.sampling, self._defaults, max_tokens))
        try:
            reply = await self._with_retries(lambda: self._call("POST", "/completions", body))
            return _completion(request, reply, started)
        except StepError as exc:
            return error_completion(request, str(exc), started)

    async def _with_retries(self, attempt: Any, retries: int | None = None) -> JSONObject:
        """`attempt`'s answer; a fault that allows a retry is retried `retries` times with exponential backoff
        (each one counted in the fault log), then raised."""
        assert self._semaphore is not None
        retries = self.config.max_retries if retries is None else retries
        for n in range(retries + 1):
            try:
                async with self._semaphore:
                    answer = await in_daemon_thread(attempt, "wtb-openai")
            except Fault as fault:
                if not fault.retry or n == retries:
                    if n:
                        fault.detail = f"{fault.detail} (gave up after {n + 1} attempts)"
                        fault.args = (fault.detail,)
                    raise
                self.fault_log.met[fault.kind] += 1
            else:
                self.fault_log.recovered += int(n > 0)
                return answer
            # Back off outside the semaphore so waiting retries do not block fresh requests.
            await asyncio.sleep(self.config.retry_backoff_s * 2**n)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _call(self, method: str, path: str, body: Mapping[str, object] | None) -> JSONObject:
        """One blocking HTTP exchange (runs in the pool). Returns the decoded JSON object, as the server sent it."""
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        headers.update(self._url.headers())
        req = urllib.request.Request(self._url.endpoint(path), data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.config.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise http_fault(exc.code, path, self._url.mask(_error_detail(exc.read()))) from None
        except TimeoutError:
            raise Timeout(f"no answer from {path} within {self.config.timeout_s:g} s") from None
        except (urllib.error.URLError, ConnectionError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):
                raise Timeout(f"no answer from {path} within {self.config.timeout_s:g} s") from None
            raise ConnectionFailed(f"connection error on {path}: {self._url.mask(str(reason))}") from None
        try:
            payload = json.loads(raw)
        except ValueError:
            raise BadResponse(f"bad response from {path}: not JSON: {self._url.mask(_clip(raw))}") from None
        if not isinstance(payload, dict):
            raise BadResponse(f"bad response from {path}: expected a JSON object, got {type(payload).__name__}")
        return payload

    @classmethod
    def engine(cls) -> EngineIdentity:
        # /completions carries no tools: the server has nothing to constrain decoding to
        return {**super().engine(), "constrained_decoding": "off (text completions carry no tools)"}

    @classmethod
    def check(cls, options: Any) -> None:
        from wtb_local.engines import preflight

        if cls.capabilities.packages:
            preflight.require_packages(f"--backend {cls.name}", cls.capabilities.packages)
        if not options.model:
            raise SetupError(f"--backend {cls.name} needs --model" + (
                "" if cls.capabilities.renders_prompts else " (the name the server serves)"))
        if not options.base_url:
            raise SetupError(f"--backend {cls.name} needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        preflight.require_server(options.base_url, options.api_key)
        if cls.capabilities.needs_tokenizer == "yes":
            preflight.require_hub(options.model, options.revision)

    @classmethod
    def resolve(cls, values: dict[str, Any], sources: dict[str, str], stderr: Any) -> None:
        # only server mode sends a rendered prompt over the wire: the one backend recording the format
        if not values.get("server_prompt"):
            values["server_prompt"], sources["server_prompt"] = "token-ids", "default"

    @classmethod
    def config_from_run(cls, run: Any) -> OpenAIConfig:
        return OpenAIConfig(**run.engine_settings(OpenAIConfig))

    @classmethod
    def from_run(cls, run: Any, *, parser: Any, renderer: Any) -> OpenAIBackend:
        return cls(cls.config_from_run(run))

    def describe(self) -> BackendDescription:
        settings = self.config.model_dump(exclude={"api_key"})  # never record credentials
        settings["base_url"] = self._url.shown
        settings["api_key_set"] = bool(self.config.api_key)
        return {"backend": self.name, "settings": settings, "server_models": self._server_models,
                "max_model_len": self._max_model_len, "generation_defaults": dict(sorted(self._defaults.items()))}


def http_fault(status: int, path: str, detail: str) -> Exception:
    """A server's HTTP error: the step's `prompt too long` when a 4xx says so, else a machine fault (retried
    for 429 and 5xx)."""
    message = f"HTTP {status} from {path}: {detail}"
    if status == 429 or status >= 500:
        return ServerError(message, status=status)
    if context_overflow(detail):
        return StepError(f"prompt too long: {message}")
    return RequestRejected(message, status=status)


def finish_reason(value: Any, path: str, known: dict[str, str]) -> str:
    """The runner's finish reason for a server's: `known` ones as mapped; a content filter is the step's
    outcome (the endpoint under test refused to answer); anything else (vLLM's `abort`, `error`) means the
    server did not finish the request: a machine fault."""
    finish = known.get(str(value or "stop"))
    if finish is not None:
        return finish
    if value == "content_filter":
        raise StepError(f"generation ended with {value!r}")
    raise BadResponse(f"bad response from {path}: generation ended with {value!r}")


_TEXT_FINISH = {"stop": "stop", "length": "length"}


def _completion(request: GenerationRequest, reply: JSONObject, started: float) -> Completion:
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadResponse(f"bad response from /completions: no choices: {_clip(json.dumps(reply))}")
    choice = choices[0]
    text = choice.get("text")
    if not isinstance(text, str):
        raise BadResponse("bad response from /completions: choices[0].text is not a string")
    finish = finish_reason(choice.get("finish_reason"), "/completions", _TEXT_FINISH)
    usage = reply.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    return Completion(
        request_id=request.request_id,
        text=text,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=finish,
        latency_s=time.perf_counter() - started,
        cached_tokens=_cached_tokens(usage),
    )


def _cached_tokens(usage: dict[str, Any]) -> int | None:
    """usage.prompt_tokens_details.cached_tokens: sent by OpenAI's API and by `vllm serve
    --enable-prompt-tokens-details`; None when the server does not report it."""
    details = usage.get("prompt_tokens_details")
    value = details.get("cached_tokens") if isinstance(details, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _error_detail(raw: bytes) -> str:
    """The server's own message when it sent the OpenAI error shape, else the start of the body."""
    try:
        payload = json.loads(raw)
    except ValueError:
        return _clip(raw)
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:_DETAIL_CHARS]
        if isinstance(error, str):
            return error[:_DETAIL_CHARS]
        if payload.get("message"):
            return str(payload["message"])[:_DETAIL_CHARS]
    return _clip(raw)


def _clip(raw: bytes | str) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return text[:_DETAIL_CHARS]
