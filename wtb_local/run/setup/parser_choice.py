"""The tool-call parser a run reads replies with, and its options (the reasoning pre-fill)."""

from __future__ import annotations

from typing import Any

from wtb_local.contract.errors import RunError
from wtb_local.run.setup.tokenizer import local_config


def choose_parser(name: str | None, *, model: str | None, renderer: Any,
                  options: dict[str, Any] | None = None, revision: str | None = None,
                  trust_remote_code: bool = False,
                  fallbacks: dict[str, str] | None = None) -> tuple[Any, dict[str, Any]]:
    """The parser `name` (default: chosen from the template and model id) and the options it was built
    with (`options` when given, else the reasoning pre-fill the prompts call for). `vllm:NAME` is vLLM's
    own parser, built with the run's tokenizer as vLLM loads it (formats/parsers/vllm_native.py). `fallbacks` gets
    {option: why} for an option decided without the evidence it is normally decided from."""
    from wtb_local.formats.parsers import get_parser
    from wtb_local.formats.parsers.sglang_native import SglangParserSetupError  # deferred: start-up
    from wtb_local.formats.parsers.vllm_native import (  # deferred: start-up
        VllmParserSetupError,
        is_vllm_parser,
        load_tokenizer,
    )

    if name and name.startswith("paper:"):  # a recorded paper-protocol run (replay): its family's parser
        from wtb_local.benchmark.protocols.parse_rules import native_parser_name  # deferred: start-up

        name = native_parser_name(name)
    if not name:
        if not model:
            raise RunError("--model is needed to choose a tool-call parser (or pass --parser)")
        template = getattr(renderer, "template", None) if renderer is not None else None
        try:
            name = _select(model, template, renderer)
        except ValueError as exc:
            raise RunError(str(exc)) from None
    chosen = dict(options or _prefill_options(renderer, name, fallbacks))
    if not options:
        chosen.update(_template_options(renderer, name))
    if name in ("response_template", "hf") and "response_template" not in chosen:
        metadata = response_template_metadata(renderer, model)
        if metadata is not None:
            chosen["response_template"] = metadata
    try:
        tokenizer = (load_tokenizer(model, revision=revision, trust_remote_code=trust_remote_code)
                     if is_vllm_parser(name) else None)
        return get_parser(name, tokenizer=tokenizer, **chosen), chosen
    except (VllmParserSetupError, SglangParserSetupError) as exc:
        raise RunError(f"--parser {name}: {exc}") from None
    except ValueError as exc:
        raise RunError(f"--parser: {exc}") from None


def _select(model: str, template: str | None, renderer: Any) -> str:
    """The parser from the template's markers, then the model id; then the reply format the checkpoint
    declares (its response_template: no family code needed), before config.json's architecture, which
    fine-tunes of every format share."""
    from wtb_local.formats.parsers import select_parser  # deferred: start-up

    try:
        return select_parser(model, chat_template=template)
    except ValueError:
        if response_template_metadata(renderer, model) is not None:
            return "response_template"
    return select_parser(model, chat_template=template, config=local_config(model))


def response_template_metadata(renderer: Any, model: str | None) -> dict[str, Any] | str | None:
    """The `response_template` the run's checkpoint declares (its tokenizer, else its tokenizer_config.json)."""
    from wtb_local.formats.parsers.response_template import declared_response_template  # deferred: start-up

    return declared_response_template(getattr(renderer, "tokenizer", None) if renderer is not None else None, model)


def _template_options(renderer: Any, name: str) -> dict[str, Any]:
    """The chat-template kwargs the parser reads as options of the same name (`template_options`: K2
    Horizon's `tool_call_format` and `reasoning_effort` decide which call form and reasoning block it reads)."""
    from wtb_local.formats.parsers import parser_class  # deferred: start-up

    kwargs = getattr(renderer, "template_kwargs", None) if renderer is not None else None
    try:
        wanted = getattr(parser_class(name), "template_options", ())
    except ValueError:  # vLLM's own parser
        return {}
    return {key: kwargs[key] for key in wanted if isinstance(kwargs, dict) and key in kwargs}


def _prefill_options(renderer: Any, parser_name: str, fallbacks: dict[str, str] | None = None) -> dict[str, Any]:
    """Rendered prompts that may open a reasoning block (the probe's does, or the family reads every
    completion as reasoning by default) decide the pre-fill per step, from each step's own prompt: R1-Distill
    pre-fills `<think>` after a user turn, not after tool results (formats/parsers/prefill.py)."""
    from wtb_local.formats.parsers import parser_class  # deferred: start-up
    from wtb_local.formats.parsers.prefill import PER_STEP

    if renderer is None:
        return {}
    from wtb_local.formats.parsers.sglang_native import (  # deferred: start-up
        MIRRORS,
        is_sglang_parser,
        sglang_name,
    )
    from wtb_local.formats.parsers.vllm_native import vllm_name  # deferred: start-up

    ours = MIRRORS.get(sglang_name(parser_name), "") if is_sglang_parser(parser_name) else vllm_name(parser_name)
    try:  # vLLM's or SGLang's own parser: the family of ours that mirrors its name
        family_thinks = getattr(parser_class(ours), "thinking", None) is True
    except ValueError:
        family_thinks = False
    if family_thinks:
        return {"thinking": PER_STEP}
    try:
        opens = prefills_reasoning(renderer)
    except Exception as exc:  # noqa: BLE001 - said and recorded: each step's own prompt decides instead
        # Not "no pre-fill": that would read a cut completion as a final answer where the prompts open a
        # reasoning block. Deciding per step reads each step's rendered prompt, the evidence itself.
        if fallbacks is not None:
            fallbacks["parser_options"] = (
                f"per step: the generation prompt could not be rendered to decide the reasoning pre-fill once "
                f"({type(exc).__name__}: {' '.join(str(exc).split())}); each step's own prompt decides it")
        return {"thinking": PER_STEP}
    return {"thinking": PER_STEP} if opens else {}


def prefills_reasoning(renderer: Any) -> bool:
    """Whether the generation prompt ends inside an opened reasoning block (R1, Qwen3-Thinking-2507, ...).
    Then a completion cut at the token limit before `</think>` is reasoning, not a final text answer.
    Raises what rendering the generation prompt raises (the caller decides per step instead)."""
    from wtb_local.formats.reasoning_blocks import ends_in_open_reasoning  # deferred: start-up
    from wtb_local.run.setup.thinking import generation_prompt  # deferred: start-up

    if renderer is None:
        return False
    return ends_in_open_reasoning(generation_prompt(renderer))
