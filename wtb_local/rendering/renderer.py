"""Render the evaluator's conversation into the exact prompt a model sees, with its own chat template.

Rendering goes through transformers' `apply_chat_template` (the same Jinja sandbox the model's authors
target); the template is probed first (probe.py) and history is reshaped by the adaptation the probe
chose. Token ids come from tokenising the rendered text WITHOUT adding special tokens again: templates
already write BOS, a second one would change the model's input.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from wtb_local.end_of_turn import END_OF_TURN, strip_end_of_turn
from wtb_local.rendering.adapt import adapt_messages
from wtb_local.rendering.kwargs import thinking_kwargs
from wtb_local.rendering.probe import PROBE_TOOLS, RENDER_ERRORS, TemplateChoice, choose_template
from wtb_local.rendering.segment_tokens import SegmentEncoder
from wtb_local.rendering.templates import TemplateError, resolve_template


class RenderedPrompt(BaseModel):
    text: str
    token_ids: list[int]


class PromptRenderer:
    """Probe the template once, then render every step of a run the same way."""

    def __init__(self, tokenizer: Any, *, model_id: str = "", chat_template: str | None = None,
                 template_kwargs: dict[str, Any] | None = None, thinking: bool | None = None) -> None:
        """`chat_template`: an override name or a file path (None: the tokenizer's own). `thinking`
        becomes the family's switch (kwargs.py); explicit `template_kwargs` win over it."""
        self.tokenizer = tokenizer
        self.model_id = model_id or str(getattr(tokenizer, "name_or_path", "") or "")
        if chat_template is not None:
            source, text = resolve_template(chat_template)
        else:
            source, text = "tokenizer", self._own_template()
        self.template_kwargs = {**thinking_kwargs(thinking, model_id=self.model_id, template=text),
                                **(template_kwargs or {})}
        self.template: str
        self.choice: TemplateChoice
        self.template, self.choice = choose_template(self._render_with, text, source, self.model_id)

    @classmethod
    def from_pretrained(cls, model_id_or_path: str, *, revision: str | None = None,
                        trust_remote_code: bool = False, chat_template: str | None = None,
                        template_kwargs: dict[str, Any] | None = None,
                        thinking: bool | None = None) -> PromptRenderer:
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
                   template_kwargs=template_kwargs, thinking=thinking)

    # --- rendering -------------------------------------------------------------------------------------

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> RenderedPrompt:
        text = self.render_text(messages, tools)
        return RenderedPrompt(text=text, token_ids=self.segments.encode(text))

    @property
    def segments(self) -> SegmentEncoder:
        """The prompt tokeniser of `render`: the same ids as `encode`, pieces between special tokens cached."""
        if getattr(self, "_segments", None) is None:
            self._segments = SegmentEncoder(self.tokenizer)
        return self._segments

    def render_text(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *,
                    add_generation_prompt: bool = True) -> str:
        adapted = adapt_messages(messages, self.choice.adaptation)
        return self._render_with(self.template, adapted, tools or [], add_generation_prompt=add_generation_prompt)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def assistant_text(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                       reply: dict[str, Any]) -> str | None:
        """The raw completion a model would have written for `reply` ({content, tool_calls}).

        The conversation is rendered without and with the assistant turn; the difference after the
        generation prompt is the completion, minus the end-of-turn token(s). Some templates place text
        by the position of the last message (Mistral attaches the system prompt to the last user turn),
        so when the longer rendering does not extend the prompt, the completion is taken after the last
        occurrence of the prompt's final message text + generation prompt. None when neither works (the
        generation prompt pre-fills text the history form lacks, e.g. `<think>`, or whitespace differs):
        callers fall back to the parser's format.
        """
        assistant = {"role": "assistant", "content": reply.get("content") or ""}
        if reply.get("tool_calls"):
            assistant["tool_calls"] = reply["tool_calls"]
        try:
            prompt = self.render_text(messages, tools)
            full = self.render_text([*messages, assistant], tools, add_generation_prompt=False)
        except RENDER_ERRORS:  # a template that cannot render the reply yields no clean cut
            return None
        if full.startswith(prompt):
            return self._strip_end(full[len(prompt):])
        return self._anchored_cut(messages, prompt, full)

    # --- internals ---------------------------------------------------------------------------------------

    def _anchored_cut(self, messages: list[dict[str, Any]], prompt: str, full: str) -> str | None:
        last = messages[-1].get("content") if messages else None
        if not isinstance(last, str) or not last or last not in prompt:
            return None
        anchor = last + prompt[prompt.rindex(last) + len(last):]
        if full.count(anchor) != 1:  # ambiguous or absent: no clean cut
            return None
        return self._strip_end(full[full.index(anchor) + len(anchor):])

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

    def _render_with(self, template: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                     *, add_generation_prompt: bool = True) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tools=tools or None, chat_template=template,
            add_generation_prompt=add_generation_prompt, tokenize=False, **self.template_kwargs)

    def _end_markers(self) -> list[str]:
        markers = set(END_OF_TURN)
        eos = getattr(self.tokenizer, "eos_token", None)
        if isinstance(eos, str) and eos:
            markers.add(eos)
        return sorted(markers, key=len, reverse=True)

    def _strip_end(self, text: str) -> str:
        return strip_end_of_turn(text, self._end_markers()).rstrip()
