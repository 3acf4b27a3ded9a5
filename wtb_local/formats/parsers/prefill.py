"""Reasoning pre-fill decided per step, from that step's own generation prompt.

A template may open a reasoning block (`<think>\\n`) at the end of some generation prompts and not others:
the DeepSeek-R1-Distill templates pre-fill it after a user turn but not after tool results. A completion
after a pre-filled opening starts inside the block (parse with `thinking=True`); any other completion is
read from its own text (`thinking=None`: a block the model opens or closes itself is still split off).

A run whose prompts can pre-fill records the parser option `"thinking": "per-step"` (its manifest's
`parser_options`); each step then records `prefilled_reasoning` (true/false) next to its raw completion,
so a replay parses every step the way the run did without rendering anything.
"""

from __future__ import annotations

from typing import Any

PER_STEP = "per-step"  # the `thinking` parser option of a run that decides the pre-fill per step
STEP_FIELD = "prefilled_reasoning"  # the step record (inference_output) field holding the decision


def prompt_prefills(prompt: str) -> bool:
    """Whether a rendered generation prompt ends inside an opened reasoning block."""
    from wtb_local.formats.reasoning_blocks import ends_in_open_reasoning  # deferred: start-up

    return ends_in_open_reasoning(prompt)


def split_options(options: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(the options a parser is built with, whether the pre-fill is decided per step)."""
    if options.get("thinking") == PER_STEP:
        return {k: v for k, v in options.items() if k != "thinking"}, True
    return dict(options), False


def decides_per_step(parser: Any) -> bool:
    return bool(getattr(parser, "per_step_prefill", False))


def step_parser(parser: Any, prefilled: bool | None) -> Any:
    """The parser that reads one step's completion: `parser` itself unless it decides per step and the
    step's pre-fill is known, else a sibling built with `thinking=True` (pre-filled) or `thinking=None`
    (read from the text; this also overrides a family default such as deepseek_r1's `thinking=True`)."""
    if prefilled is None or not decides_per_step(parser):
        return parser
    variants = parser.__dict__.setdefault("_step_variants", {})
    if prefilled not in variants:
        variants[prefilled] = type(parser)(**{**parser.options, "thinking": True if prefilled else None})
    return variants[prefilled]
