"""Render the evaluator's conversation into the exact prompt a model sees, with its own chat template.

Rendering goes through transformers' `apply_chat_template` (the same Jinja sandbox the model's authors
target) with the conversation's own date as the template's clock (clock.py); the template is probed first (probe.py) and history is reshaped by the adaptation the probe
chose. Token ids come from tokenising the rendered text WITHOUT adding special tokens again: templates
already write BOS, a second one would change the model's input.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from wtb_local.contract.messages import ChatMessage, Reply, ToolSchema
from wtb_local.formats.end_of_turn import END_OF_TURN, strip_end_of_turn
from wtb_local.formats.rendering.adapt import GrowingAdapter, adapt_messages
from wtb_local.formats.rendering.checks import PATHS, CheckPolicy, PromptChecks
from wtb_local.formats.rendering.clock import (
    CLOCK_ARGUMENT,
    clocked_template,
    conversation_date,
    frozen_clock,
    render_chat,
)
from wtb_local.formats.rendering.kwargs import thinking_kwargs
from wtb_local.formats.rendering.probe import (
    PROBE_TOOLS,
    RENDER_ERRORS,
    TemplateChoice,
    choose_template,
    completion_after,
    cut_completion,
)
from wtb_local.formats.rendering.segment_tokens import SegmentEncoder
from wtb_local.formats.rendering.templates import TemplateError, resolve_template


class RenderedPrompt(BaseModel):
    text: str
    token_ids: list[int]


class PromptRenderer:
    """Probe the template once, then render every step of a run the same way."""

    def __init__(self, tokenizer: Any, *, model_id: str = "", chat_template: str | None = None,
                 template_kwargs: dict[str, Any] | None = None, thinking: bool | None = None,
                 parser: str | None = None) -> None:
        """`chat_template`: an override name or a file path (None: the family's renderer where one serves
        the model, else the tokenizer's own, else an override serving the model). `thinking` becomes the
        family's switch (kwargs.py); explicit `template_kwargs` win over it. `parser`: the run's `--parser`
        (None: the one selected for the model), which the probe reads past calls with."""
        self.tokenizer = tokenizer
        self.model_id = model_id or str(getattr(tokenizer, "name_or_path", "") or "")
        if chat_template is not None:
            (source, text), why = resolve_template(chat_template), None
        else:
            source, text, why = self._default_template()
        self.template_kwargs = {**thinking_kwargs(thinking, model_id=self.model_id, template=text),
                                **(template_kwargs or {})}
        self.template: str
        self.choice: TemplateChoice
        from wtb_local.formats.parsers.response_template import (  # deferred: start-up
            declared_response_template,
        )

        self.template, self.choice = choose_template(self._render_with, text, source, self.model_id,
                                                     parser=parser, metadata=declared_response_template(tokenizer))
        if why and self.choice.source == source:
            self.choice = self.choice.model_copy(update={"reason": f"{why}; {self.choice.reason}"})

    @classmethod
    def from_pretrained(cls, model_id_or_path: str, *, revision: str | None = None,
                        trust_remote_code: bool = False, chat_template: str | None = None,
                        template_kwargs: dict[str, Any] | None = None,
                        thinking: bool | None = None, parser: str | None = None) -> PromptRenderer:
        """Load the tokenizer with transformers (imported here: the CLI must start fast).

        transformers itself honours HF_HOME and HF_HUB_OFFLINE; local directories never touch the hub.
        """
        from transformers import AutoTokenizer

        if model_id_or_path.startswith(("/", "./", "../", "~")) and not Path(model_id_or_path).expanduser().exists():
            raise FileNotFoundError(f"no such model directory: {model_id_or_path}")
        kwargs: dict[str, Any] = {"revision": revision, "trust_remote_code": trust_remote_code}
        if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes"):
            kwargs["local_files_only"] = True
        tokenizer = AutoTokenizer.from_pretrained(model_id_or_path, **kwargs)
        return cls(tokenizer, model_id=model_id_or_path, chat_template=chat_template,
                   template_kwargs=template_kwargs, thinking=thinking, parser=parser)

    @classmethod
    def from_local(cls, model: str, *, revision: str | None = None, trust_remote_code: bool = False,
                   chat_template: str | None = None, template_kwargs: dict[str, Any] | None = None,
                   parser: str | None = None) -> PromptRenderer:
        """Load the tokenizer from a local directory or the hub cache only (never the network): for a run
        that uses a tokenizer when it is on disk, and for `explain` re-rendering a recorded run's prompts."""
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model, revision=revision, trust_remote_code=trust_remote_code,
                                                  local_files_only=True)
        return cls(tokenizer, model_id=model, chat_template=chat_template, template_kwargs=template_kwargs,
                   parser=parser)

    def __getstate__(self) -> dict[str, Any]:
        """What a render worker needs (pool.py): the tokenizer, the template chosen and its variables, the
        checks' policy. The fast paths hold compiled code and caches; a copy builds its own, and checks
        them again under the same policy, with counts of its own."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("_fast", "_segments", "_growing")}
        state["_checks"] = self.prompt_checks.fresh()
        return state

    # --- checking the fast paths (checks.py) ------------------------------------------------------------

    @property
    def prompt_checks(self) -> PromptChecks:
        """This process's checks of the fast paths (the default policy until `check_prompts`)."""
        if getattr(self, "_checks", None) is None:
            self._checks = PromptChecks()
        return self._checks

    def check_prompts(self, policy: CheckPolicy) -> None:
        """Check the fast paths under `policy` from now on, with fresh counts (a run's start)."""
        self._checks = PromptChecks(policy)
        for fast in (getattr(self, "_fast", None), getattr(self, "_segments", None)):
            if fast is not None:
                fast.checks = self._checks

    def check_prompts_totals(self) -> tuple[int, ...]:
        return self.prompt_checks.totals()

    def use_reference(self, path: str) -> None:
        """Build prompts by the reference path alone from now on for `path` ("rendering": apply_chat_template;
        "tokenisation": the whole prompt at once): a mismatch was found, here or in another process."""
        if path not in PATHS:
            raise ValueError(f"unknown prompt path {path!r}")
        off = {*getattr(self, "_reference_only", ()), path}
        self._reference_only = frozenset(off)
        if path == "rendering" and getattr(self, "_fast", None) is not None:
            self._fast.off("fast rendering off: a mismatch elsewhere in the run")
        if path == "tokenisation" and getattr(self, "_segments", None) is not None:
            self._segments.off("piecewise tokenisation off: a mismatch elsewhere in the run")

    def check_notes(self) -> list[str]:
        """Why a fast path is off in this process, if one is."""
        fast, segments = getattr(self, "_fast", None), getattr(self, "_segments", None)
        return [note for note in (getattr(fast, "note", ""), getattr(segments, "note", "")) if note]

    # --- rendering -------------------------------------------------------------------------------------

    reads_only = True  # never changes the messages it is given (adapt_messages copies what it reshapes)
    # the fast paths' classes (None: FastTemplate, SegmentEncoder); a subclass may put others in their place
    fast_template: Any = None
    segment_encoder: Any = None
    renders_in_workers = True  # picklable; render_text(grows=) + encode_prompt run in a RenderPool (pool.py)

    def render(self, messages: list[ChatMessage], tools: list[ToolSchema] | None) -> RenderedPrompt:
        text = self.render_text(messages, tools)
        return RenderedPrompt.model_construct(text=text, token_ids=self.encode_prompt(text))

    def encode_prompt(self, text: str, key: Any = None, family: Any = None) -> list[int]:
        """A rendered prompt's token ids (`render`'s): equal to `encode(text)`, computed piecewise; `key`
        names the conversation, whose previous prompt's ids are reused as far as the texts agree, and
        `family` conversations sharing a beginning (SegmentEncoder.encode)."""
        return self.segments.encode(text, key, family)

    def forget(self, key: Any, family: Any = None) -> None:
        """The conversation `key` (and, given, the whole `family`) has ended: no need to remember it."""
        self.segments.forget(key)
        if family is not None:
            self.segments.forget(("family", family))

    @property
    def segments(self) -> SegmentEncoder:
        """The prompt tokeniser of `render`: the same ids as `encode`, pieces between special tokens cached."""
        if getattr(self, "_segments", None) is None:
            self._segments = (self.segment_encoder or SegmentEncoder)(self.tokenizer, self.prompt_checks)
            if "tokenisation" in getattr(self, "_reference_only", ()):
                self._segments.off("piecewise tokenisation off: a mismatch elsewhere in the run")
        return self._segments

    def render_text(self, messages: list[ChatMessage], tools: list[ToolSchema] | None, *,
                    add_generation_prompt: bool = True, grows: bool = False) -> str:
        """The prompt text. `grows`: `messages` is a conversation that only grows and whose dicts never
        change once appended (an episode's own), so each message is reshaped once (adapt.GrowingAdapter)."""
        if grows:
            if getattr(self, "_growing", None) is None:
                self._growing = GrowingAdapter(self.choice.adaptation)
            adapted = self._growing(messages)
        else:
            adapted = adapt_messages(messages, self.choice.adaptation)
        if getattr(self, "_fast", None) is None:
            fast = self.fast_template or FastTemplate
            self._fast = fast(self._render_with, self.tokenizer, self.template, self.template_kwargs, self.prompt_checks)
            if "rendering" in getattr(self, "_reference_only", ()):
                self._fast.off("fast rendering off: a mismatch elsewhere in the run")
        return self._fast.render(adapted, tools or [], add_generation_prompt=add_generation_prompt)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def assistant_text(self, messages: list[ChatMessage], tools: list[ToolSchema] | None,
                       reply: Reply) -> str | None:
        """The raw completion a model would have written for `reply` ({content, tool_calls}).

        The assistant turn is cut out of the template's rendering of the conversation with it, exactly as
        the probe cuts past calls (`probe.cut_completion`), minus the end-of-turn token(s); after a
        generation prompt that pre-fills a reasoning opening (`<think>\n`) the completion first closes it
        (`</think>` + blank line). None when there is no clean cut: callers fall back to the parser's
        format (and count it).
        """
        assistant: ChatMessage = {"role": "assistant", "content": reply.get("content") or ""}
        calls = reply.get("tool_calls")
        if calls:
            assistant["tool_calls"] = calls
        adapted = adapt_messages([*messages, assistant], self.choice.adaptation)
        # split_parallel turns one reply into several messages: the reply is everything after the history
        start = len(adapt_messages(messages, self.choice.adaptation))
        if len(adapted) != start + 1:
            return None
        try:
            cut = cut_completion(self._render_with, self.template, adapted, start, tools or [])
        except RENDER_ERRORS:  # a template that cannot render the reply yields no clean cut
            return None
        return None if cut is None else completion_after(cut[1], self._strip_end(cut[0]))

    # --- internals ---------------------------------------------------------------------------------------

    def _default_template(self) -> tuple[str, str, str | None]:
        """(source, text, why) when no --chat-template is given: the family's renderer for a model trained
        on a Python encoder (as vLLM renders it), else the tokenizer's own template, else an override that
        serves the model when the tokenizer has none."""
        from wtb_local.formats.rendering.templates import override_for, renderer_for

        renderer = renderer_for(self.model_id)
        if renderer is not None:
            return renderer.label, renderer.text(), f"rendered as vLLM serves it: {renderer.renderer}"
        try:
            return "tokenizer", self._own_template(), None
        except TemplateError:
            override = override_for(self.model_id)
            if override is None:
                raise
            return override.label, override.text(), "the tokenizer has no chat template"

    def _own_template(self) -> str:
        try:
            text = self.tokenizer.get_chat_template(None, tools=PROBE_TOOLS)
        except (ValueError, AttributeError) as exc:
            raise TemplateError(f"tokenizer of {self.model_id or 'the model'} has no usable chat template: "
                                f"{exc}; pass --chat-template NAME|PATH") from exc
        if not text:
            raise TemplateError(f"tokenizer of {self.model_id or 'the model'} has no chat template; "
                                "pass --chat-template NAME|PATH")
        return text

    def _render_with(self, template: str, messages: list[ChatMessage], tools: list[ToolSchema],
                     *, add_generation_prompt: bool = True, **context: Any) -> str:
        # `context`: extra template variables for this rendering only; the clock is the conversation's
        return render_chat(self.tokenizer, template, messages, tools, add_generation_prompt=add_generation_prompt,
                           **{**self.template_kwargs, **context})

    def _end_markers(self) -> list[str]:
        markers = set(END_OF_TURN)
        eos = getattr(self.tokenizer, "eos_token", None)
        if isinstance(eos, str) and eos:
            markers.add(eos)
        return sorted(markers, key=len, reverse=True)

    def _strip_end(self, text: str) -> str:
        return strip_end_of_turn(text, self._end_markers()).rstrip()


class FastTemplate:
    """`apply_chat_template(..., tokenize=False)` of one template without its per-call overhead, byte for
    byte (docs/runner-speed.md §2).

    The same compiled template renders in the same sandbox with the same variables; two things differ
    only in cost: the call goes straight to the compiled template, and attribute access on a plain dict
    (`message.role`), which the sandbox answers by first trying `getattr` and catching AttributeError,
    goes straight to the item when the name is not an attribute of dict (so that getattr would fail).
    Checked, not assumed, as `SegmentEncoder` checks its ids: the renderings `checks.policy` names (the
    first 4 and every N-th, `--verify-prompts`; checks.py) are also rendered by `apply_chat_template` and
    compared; on any difference the reference rendering is returned, the mismatch goes to `checks`, and
    the fast path is off for good (as it is from the start on a transformers without the compiled-template
    helper, which `note` says). A rendering that raises is rendered again the slow way, so errors are
    transformers' own.
    """

    def __init__(self, slow: Any, tokenizer: Any, template: str, template_kwargs: dict[str, Any],
                 checks: PromptChecks | None = None) -> None:
        self._slow = slow  # PromptRenderer._render_with
        self._template_text = template
        self.checks = checks if checks is not None else PromptChecks()
        self.renders = 0
        self.note = ""
        try:
            from transformers.utils.chat_template_utils import _compile_jinja_template

            compiled = _compile_jinja_template(template)
        except Exception as exc:  # noqa: BLE001 - any trouble here only means the slow path
            self._template, self.note = None, f"fast rendering off: {type(exc).__name__}: {exc}"
            return
        env = compiled.environment.overlay()  # the same sandbox, filters and globals, a getattr of its own
        env.filters = dict(env.filters)
        sandbox_getattr = type(env).getattr
        dict_names = frozenset(dir(dict))
        undefined = env.undefined
        # jinja2's own sandboxes judge `obj.name` by the name and the object's type only (is_safe_attribute
        # ignores the value; is_internal_attribute and modifies_known_mutable test isinstance and the name),
        # so each (type, name) is judged once: for every type under those sandboxes, else for builtins.
        from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment  # deferred: start-up

        judged_by_type = type(env).is_safe_attribute in (SandboxedEnvironment.is_safe_attribute,
                                                         ImmutableSandboxedEnvironment.is_safe_attribute)
        builtin = (str, list, tuple, int, float, bool, type(None))
        verdicts: dict[tuple[type, str], bool] = {}

        def getattr_(obj: Any, attribute: str) -> Any:
            kind = type(obj)
            if kind is dict and attribute not in dict_names:
                try:
                    return obj[attribute]
                except KeyError:
                    return undefined(obj=obj, name=attribute)
            if judged_by_type or kind in builtin:
                safe = verdicts.get((kind, attribute))
                if safe is not None:
                    return getattr(obj, attribute) if safe else env.unsafe_undefined(obj, attribute)
                try:
                    value = getattr(obj, attribute)
                except AttributeError:
                    return sandbox_getattr(env, obj, attribute)
                safe = verdicts[(kind, attribute)] = bool(env.is_safe_attribute(obj, attribute, value))
                return value if safe else env.unsafe_undefined(obj, attribute)
            return sandbox_getattr(env, obj, attribute)

        env.getattr = getattr_
        # A tool schema's JSON is written once per (schema, options): the schemas of a run are the same
        # dicts at every step and are never changed (docs/runner-speed.md §2).
        tojson = env.filters["tojson"]
        self._schemas: dict[int, Any] = {}  # id -> schema, for the rendering in progress
        written: dict[tuple[int, tuple[Any, ...]], tuple[Any, str]] = {}

        def tojson_(value: Any, *args: Any, **kwargs: Any) -> str:
            if id(value) not in self._schemas:
                return tojson(value, *args, **kwargs)
            key = (id(value), (*args, *sorted(kwargs.items())))
            try:
                known = written.get(key)
            except TypeError:  # an unhashable option (separators as a list): not memoised
                return tojson(value, *args, **kwargs)
            if known is None or known[0] is not value:
                if len(written) >= 4096:
                    written.clear()
                known = written[key] = (value, tojson(value, *args, **kwargs))
            return known[1]

        env.filters["tojson"] = tojson_
        # the same frozen clock as the slow path (clock.py): its macro before the text, the conversation's
        # date as data; a template that never calls strftime_now gets no date to format
        self._template = env.from_string(clocked_template(template))
        self._reads_clock = "strftime_now" in template
        # apply_chat_template's variables: the special tokens, then the call's keyword arguments
        self._variables = {**tokenizer.special_tokens_map, **template_kwargs}
        self._prepare_messages = _installed_message_steps()

    def render(self, messages: list[ChatMessage], tools: list[ToolSchema], *,
               add_generation_prompt: bool) -> str:
        if self._template is None:
            self.checks.reference("rendering")
            return self._slow(self._template_text, messages, tools, add_generation_prompt=add_generation_prompt)
        self.renders += 1
        fast = self._render_fast(messages, tools, add_generation_prompt=add_generation_prompt)
        if fast is None:  # the fast rendering raised: the slow path raises transformers' own error (or renders)
            self.checks.reference("rendering")
            return self._slow(self._template_text, messages, tools, add_generation_prompt=add_generation_prompt)
        if self.checks.fast("rendering"):
            reference = self._slow(self._template_text, messages, tools, add_generation_prompt=add_generation_prompt)
            if reference != fast:
                self.checks.mismatch("rendering", fast, reference)
                self.off(f"fast rendering differed from apply_chat_template at rendering {self.renders}: "
                         "off, prompts rendered by apply_chat_template")
                return reference
        return fast

    def off(self, note: str) -> None:
        """Render by apply_chat_template alone from now on."""
        self._template = None
        self.note = self.note or note

    def _render_fast(self, messages: list[ChatMessage], tools: list[ToolSchema], *,
                     add_generation_prompt: bool) -> str | None:
        """The prompt by the compiled template; None when it raises (or the fast path is off)."""
        template = self._template
        if template is None:
            return None
        self._schemas = {id(tool): tool for tool in tools or ()}
        try:
            clock = {CLOCK_ARGUMENT: frozen_clock(conversation_date(messages))} if self._reads_clock else {}
            for step in self._prepare_messages:
                messages = step(messages)
            return template.render(messages=messages, tools=list(tools) if tools else None, documents=None,
                                         add_generation_prompt=add_generation_prompt, **self._variables, **clock)
        except Exception:  # noqa: BLE001 - the caller renders the slow way
            return None
        finally:
            self._schemas = {}


def _installed_message_steps() -> list[Any]:
    """What the installed transformers does to the messages before its template sees them, in its order.

    Newer releases (5.25) drop None-valued keys (`_normalize_chat_messages`) and copy a message's reasoning
    under every name templates read (`_alias_reasoning_fields`: gpt-oss reads `thinking`); older ones pass
    the messages as given. The fast path takes the same steps where they exist, so its prompt stays
    apply_chat_template's byte for byte on either (tests/rendering/test_fast_template.py).
    """
    from transformers.utils import chat_template_utils as utils

    return [step for step in (getattr(utils, "_normalize_chat_messages", None),
                              getattr(utils, "_alias_reasoning_fields", None)) if step is not None]
