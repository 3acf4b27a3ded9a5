"""The tool-call parser a run reads replies with, and its options (the reasoning pre-fill)."""

from __future__ import annotations

from typing import Any

from wtb_local.runner.errors import RunError
from wtb_local.runner.setup.tokenizer import local_config


def choose_parser(name: str | None, *, model: str | None, renderer: Any,
                  options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """The parser `name` (default: chosen from the template and model id) and the options it was built
    with (`options` when given, else the reasoning pre-fill the prompts call for)."""
    from wtb_local.parsers import get_parser, select_parser

    if name and name.startswith("paper:"):  # a recorded paper-protocol run (replay): its family's parser
        from wtb_local.protocols.parse_rules import native_parser_name  # deferred: start-up

        name = native_parser_name(name)
    if not name:
        if not model:
            raise RunError("--model is needed to choose a tool-call parser (or pass --parser)")
        template = getattr(renderer, "template", None) if renderer is not None else None
        try:
            name = select_parser(model, chat_template=template, config=local_config(model))
        except ValueError as exc:
            raise RunError(str(exc)) from None
    chosen = dict(options or _prefill_options(renderer, name))
    try:
        return get_parser(name, **chosen), chosen
    except ValueError as exc:
        raise RunError(f"--parser: {exc}") from None


def _prefill_options(renderer: Any, parser_name: str) -> dict[str, Any]:
    """Rendered prompts that may open a reasoning block (the probe's does, or the family reads every
    completion as reasoning by default) decide the pre-fill per step, from each step's own prompt: R1-Distill
    pre-fills `<think>` after a user turn, not after tool results (parsers/prefill.py)."""
    from wtb_local.parsers import parser_class
    from wtb_local.parsers.prefill import PER_STEP

    if renderer is None:
        return {}
    try:
        family_thinks = getattr(parser_class(parser_name), "thinking", None) is True
    except ValueError:
        family_thinks = False
    return {"thinking": PER_STEP} if family_thinks or prefills_reasoning(renderer) else {}


def prefills_reasoning(renderer: Any) -> bool:
    """Whether the generation prompt ends inside an opened reasoning block (R1, Qwen3-Thinking-2507, ...).
    Then a completion cut at the token limit before `</think>` is reasoning, not a final text answer."""
    from wtb_local.reasoning_blocks import ends_in_open_reasoning  # deferred: start-up
    from wtb_local.runner.setup.thinking import generation_prompt  # deferred: start-up

    if renderer is None:
        return False
    try:
        text = generation_prompt(renderer)
    except Exception:  # noqa: BLE001 - the probe at start-up already reported template problems
        return False
    return ends_in_open_reasoning(text)
