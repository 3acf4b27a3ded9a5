"""The thinking mode a run actually has, decided by the prompt the model sees, and the generation budget
that follows from it.

`--thinking` is only a request: Qwen3, GLM-4.5+ and Seed-OSS think unless told not to, Qwen3-Thinking,
QwQ and R1 pre-fill `<think>` whatever is asked, gpt-oss always writes an analysis channel. So the mode is
read from the rendered generation prompt (and, where the prompt cannot say, the model's output format):

1. the generation prompt ends inside an opened reasoning block (`<think>`)        -> on
2. it ends with an empty, closed block (`<think>\\n\\n</think>`, the "off" idiom)   -> off
3. the output format always reasons (gpt-oss harmony, DeepSeek-R1, MiniMax-M2) or decides
   itself (MiniMax-M3's adaptive mode), unless the prompt closes the block            -> on
4. the template has a thinking switch: the prompt equals the one rendered with the switch on (or off) and
   differs from the other one                                                     -> on (off)
5. otherwise (no reasoning block, no switch)                                      -> off

The mode picks the paper's row (Qwen3 models have two) and the default `max_new_tokens`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from wtb_local.contract.messages import ChatMessage, ToolSchema
from wtb_local.formats.reasoning_blocks import ends_in_open_reasoning

# The paper's budget (App. E.1: max_new_tokens=512) for answers without reasoning. With reasoning, 512
# tokens are often exhausted by thinking (paper-harness.md, on the paper's own Qwen3 runs); 8,192 is 16x
# that, room for the deliberation a tool choice needs, while one runaway step still costs at most 8k
# tokens of a batch. Qwen's model cards suggest 32,768 for open-ended reasoning (maths, code). The run's
# length-cut counts say whether the budget was enough.
NON_THINKING_MAX_NEW_TOKENS = 512
THINKING_MAX_NEW_TOKENS = 8192

# Parsers whose format always reasons, whatever the prompt ends with.
_REASONING_FORMATS = {
    "gpt_oss": "the harmony format always reasons (analysis channel)",
    "deepseek_r1": "DeepSeek-R1 always reasons in a <think> block",
    "minimax_m2": "MiniMax-M2 always reasons in a <think> block",
    # adaptive by default: the model decides per turn, so the budget is a thinking one
    "minimax_m3": "MiniMax-M3 decides whether to think (thinking_mode adaptive)",
}
_PROBE: list[ChatMessage] = [{"role": "user", "content": "Hi"}]
# Some templates fail without tools (Hermes-2-Pro's tool_use); runs always send tools.
_TOOLS: list[ToolSchema] = [{"type": "function", "function": {"name": "get_time", "description": "The current time.",
                                            "parameters": {"type": "object", "properties": {}}}}]


class ThinkingMode(BaseModel):
    """The effective mode (None: no prompt was rendered and nothing was asked), why, and what was asked."""

    effective: bool | None
    evidence: str
    asked: bool | None = None


def generation_prompt(renderer: Any) -> str:
    """The prompt of a one-message conversation: what the template appends for the model's turn."""
    return renderer.render_text(_PROBE, _TOOLS)


def effective_thinking(renderer: Any, *, parser: str | None, model_id: str,
                       asked: bool | None = None) -> ThinkingMode:
    """The thinking mode of a run that renders prompts with `renderer` (None: no prompt is rendered, the
    request `asked` is all there is)."""
    if renderer is None:
        if parser in _REASONING_FORMATS:
            return ThinkingMode(effective=True, evidence=_REASONING_FORMATS[parser], asked=asked)
        return ThinkingMode(effective=asked, asked=asked,
                            evidence="no prompt rendered: " + ("as asked" if asked is not None else "unknown"))
    try:
        prompt = generation_prompt(renderer)
    except Exception as exc:  # noqa: BLE001 - a template that cannot render a greeting decides nothing
        return ThinkingMode(effective=asked, asked=asked,
                            evidence=f"the generation prompt could not be rendered ({type(exc).__name__})")
    tail = prompt.rstrip()[-24:]
    if ends_in_open_reasoning(prompt):
        return ThinkingMode(effective=True, asked=asked,
                            evidence=f"the generation prompt pre-fills an open reasoning block (...{tail!r})")
    from wtb_local.formats.reasoning_blocks import empty_at_end

    if empty_at_end(prompt):
        return ThinkingMode(effective=False, asked=asked,
                            evidence=f"the generation prompt closes an empty reasoning block (...{tail!r})")
    if parser in _REASONING_FORMATS:
        closed = _closes_reasoning(prompt)
        if closed:  # the prompt already closed the block the format would open (MiniMax-M3 "disabled")
            return ThinkingMode(effective=False, asked=asked,
                                evidence=f"the generation prompt closes the reasoning block (...{tail!r})")
        return ThinkingMode(effective=True, evidence=_REASONING_FORMATS[parser], asked=asked)
    switched = _by_switch(renderer, model_id)
    if switched is not None:
        return switched.model_copy(update={"asked": asked})
    from wtb_local.formats.rendering.kwargs import thinking_switch  # deferred: start-up

    switch = thinking_switch(model_id, getattr(renderer, "template", None))
    why = f"its switch {switch} does not change it" if switch else "no thinking switch"
    return ThinkingMode(effective=False, asked=asked,
                        evidence=f"no reasoning block in the generation prompt and {why}")


def _closes_reasoning(prompt: str) -> bool:
    from wtb_local.formats.reasoning_blocks import BLOCKS

    return prompt.rstrip().endswith(tuple(closer for _, closer in BLOCKS))


def _by_switch(renderer: Any, model_id: str) -> ThinkingMode | None:
    """Compare the run's generation prompt with the ones its template renders with the thinking switch
    set on and set off (the run's other template kwargs kept)."""
    from wtb_local.formats.rendering.kwargs import thinking_kwargs, thinking_switch  # deferred: start-up

    template = getattr(renderer, "template", None)
    switch = thinking_switch(model_id, template)
    tokenizer = getattr(renderer, "tokenizer", None)
    if switch is None or tokenizer is None or template is None:  # nothing to render with
        return None
    kwargs = dict(getattr(renderer, "template_kwargs", None) or {})

    from wtb_local.formats.rendering.clock import render_chat  # deferred: start-up

    def render(extra: dict[str, Any]) -> str:
        return render_chat(tokenizer, template, _PROBE, _TOOLS, add_generation_prompt=True, **{**kwargs, **extra})

    try:
        prompt = render({})
        rendered = {mode: render(thinking_kwargs(mode, model_id=model_id, template=template))
                    for mode in (True, False)}
    except Exception:  # noqa: BLE001 - a switch value the template rejects tells nothing
        return None
    for mode in (True, False):
        if prompt == rendered[mode] and prompt != rendered[not mode]:
            value = thinking_kwargs(mode, model_id=model_id, template=template)[switch]
            return ThinkingMode(effective=mode, evidence=f"the generation prompt is the one the template "
                                f"renders with {switch}={_literal(value)}")
    return None


def _literal(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def default_max_new_tokens(thinking: bool | None) -> int:
    """The generation budget when `--max-new-tokens` is not given."""
    return THINKING_MAX_NEW_TOKENS if thinking else NON_THINKING_MAX_NEW_TOKENS
