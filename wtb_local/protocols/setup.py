"""Wiring a run to the paper protocol: family rule, generation settings, renderer, parser, episodes,
scoring and the manifest's `protocol` section. The release protocol never comes through here."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from wtb_local.protocols.dates import DateError, task_dates
from wtb_local.protocols.families import FamilyRule, build_prompt, family_for
from wtb_local.protocols.history import paper_episodes, task_texts


@dataclass
class PaperChoice:
    """The template the paper renderer uses (recorded like the release renderer's choice)."""

    source: str
    sha256: str
    reason: str

    def model_dump(self, mode: str = "json") -> dict[str, Any]:
        return {"source": self.source, "sha256": self.sha256, "reason": self.reason}


def _own_template(tokenizer: Any) -> str | None:
    """The tokenizer's own template, the tool-use one where it ships several (as apply_chat_template picks)."""
    from wtb_local.rendering.probe import PROBE_TOOLS

    try:
        return tokenizer.get_chat_template(None, tools=PROBE_TOOLS)
    except (ValueError, AttributeError):
        return None


class RenderedText:
    def __init__(self, text: str, token_ids: list[int]) -> None:
        self.text, self.token_ids = text, token_ids


class PaperRenderer:
    """Renders a step as the family's harness handle did: its prompt builder, then the model's own
    chat template (§1.1: `apply_chat_template(..., add_generation_prompt=True, tokenize=False)`)."""

    def __init__(self, tokenizer: Any, rule: FamilyRule, *, template: str | None = None,
                 template_kwargs: dict[str, Any] | None = None, source: str = "tokenizer") -> None:
        self.tokenizer = tokenizer
        self.rule = rule
        self.template = template or _own_template(tokenizer)
        if not isinstance(self.template, str) or not self.template:
            raise ValueError("paper protocol: the tokenizer has no chat template; pass --chat-template NAME|PATH")
        self.template_kwargs = dict(template_kwargs or {})
        self.choice = PaperChoice(source, hashlib.sha256(self.template.encode("utf-8")).hexdigest(),
                                  f"paper protocol: the model's own template ({rule.name} prompt builder)")

    def render_text(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        from wtb_local.rendering.clock import conversation_date, render_chat

        shaped, family_tools, kwargs = build_prompt(self.rule.name, messages, tools or [])
        # the clock reads the evaluator's conversation date: the family's builder may move that message
        return render_chat(self.tokenizer, self.template, shaped, family_tools, add_generation_prompt=True,
                           when=conversation_date(messages), **{**self.template_kwargs, **kwargs})

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> RenderedText:
        text = self.render_text(messages, tools)
        return RenderedText(text, self.encode(text))

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def assistant_text(self, messages: Any, tools: Any, reply: Any) -> None:
        return None  # the oracle writes replies with the paper parser's format


@dataclass
class PaperSetup:
    rule: FamilyRule
    dates: dict[str, list[str]]
    texts: dict[str, list[str]]
    sources: dict[str, dict[str, int]] = field(default_factory=dict)
    special_tokens: list[str] = field(default_factory=list)

    def episodes_for(self, session: Any) -> list[Any]:
        return paper_episodes(session, dates=self.dates[session.id], texts=self.texts[session.id],
                              tool_results=self.rule.tool_results)


def settings_family(settings: Any) -> FamilyRule:
    """`--paper-family`, else the family of the model id (or the run's model name)."""
    from wtb_local.protocols.families import RULES

    if settings.paper_family:
        return RULES[settings.paper_family]
    return family_for(settings.model or settings.model_name or "")


def documented_parser_name(settings: Any) -> str | None:
    """The project parser standing in for a documented family's rule before the rule replaces it (so a
    family without a project parser, e.g. Gorilla, needs no --parser); None for the generic rule."""
    from wtb_local.protocols.parse_rules import NATIVE

    rule = settings_family(settings)
    return NATIVE.get(rule.parse_rule) if rule.parse_rule != "native" else None


def family_sampling(rule: FamilyRule, sampling: Any) -> Any:
    """The family's generation length and sampling (§1.2) replacing the run's."""
    greedy = rule.sampling == "greedy"
    return sampling.model_copy(update={"max_new_tokens": rule.max_new_tokens,
                                       "temperature": 0.0 if greedy else None, "top_p": None})


def apply_paper(prep: Any) -> PaperSetup:
    """Turn a prepared release run into a paper-protocol run (in place): sampling, renderer, parser."""
    from wtb_local.protocols.parse_rules import PaperParser
    from wtb_local.runner.errors import RunError

    settings = prep.settings
    rule = settings_family(settings)
    settings.sampling = family_sampling(rule, settings.sampling)
    dates: dict[str, list[str]] = {}
    texts: dict[str, list[str]] = {}
    sources: dict[str, dict[str, int]] = {"date": {}, "user_text": {}}
    for session in prep.selected:
        try:
            dates[session.id], date_source = task_dates(session)
        except (DateError, ValueError) as exc:
            raise RunError(f"--protocol paper: {exc}") from None
        texts[session.id], text_source = task_texts(session)
        sources["date"][date_source] = sources["date"].get(date_source, 0) + 1
        sources["user_text"][text_source] = sources["user_text"].get(text_source, 0) + 1
    special: list[str] = []
    if prep.renderer is not None:
        tokenizer = prep.renderer.tokenizer
        prep.renderer = PaperRenderer(tokenizer, rule, template=_explicit_template(settings),
                                      template_kwargs=settings.template_kwargs,
                                      source="path/override" if settings.chat_template else "tokenizer")
        special = list(getattr(tokenizer, "all_special_tokens", []) or [])
        settings.template_sha256 = prep.renderer.choice.sha256
    elif settings.backend == "replay" and settings.replay:
        special = recorded_special_tokens(settings.replay)
    if settings.backend != "scripted":
        native = prep.parser
        if rule.parse_rule == "native" and native is None:
            raise RunError("--protocol paper: no tool-call parser for this model; pass --parser")
        prep.parser = PaperParser(rule.parse_rule, special_tokens=special,
                                  native=native if rule.parse_rule == "native" else None)
        settings.parser = prep.parser.name
    return PaperSetup(rule, dates, texts, sources, special)


def recorded_special_tokens(result_file: str) -> list[str]:
    """The special tokens a recorded paper run removed before parsing (its manifest), for its replay."""
    import json
    from pathlib import Path

    try:
        manifest = json.loads((Path(result_file).resolve().parents[2] / "manifest.json").read_text(encoding="utf-8"))
        tokens = manifest["protocol"]["special_tokens"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return []
    return [t for t in tokens if isinstance(t, str)] if isinstance(tokens, list) else []


def _explicit_template(settings: Any) -> str | None:
    if not settings.chat_template:
        return None
    from wtb_local.rendering.templates import resolve_template

    return resolve_template(settings.chat_template)[1]


def manifest_section(setup: PaperSetup | None, settings: Any) -> dict[str, Any]:
    """The manifest's `protocol` key: the protocol, its checker and every per-family setting applied."""
    from wtb_local.protocols import DEFAULT_CHECKER

    if setup is None:
        return {"name": "release", "checker": DEFAULT_CHECKER["release"],
                "rules": "the released evaluator (../shared/spec/evaluator.md)"}
    rule = setup.rule
    return {
        "name": "paper",
        "checker": DEFAULT_CHECKER["paper"],
        "family": rule.describe(),
        "documented": rule.documented,
        "inferred": [] if rule.documented else [f"family rule {rule.name}: {rule.source}"],
        "generation": {"max_new_tokens": settings.sampling.max_new_tokens,
                       "sampling": rule.sampling, "temperature": settings.sampling.temperature,
                       "decoding": "special tokens removed before parsing (skip_special_tokens=True)"},
        "special_tokens": sorted(setup.special_tokens),  # removed before parsing; a replay reuses them
        "tool_results": rule.tool_results,
        "parse_rule": rule.parse_rule,
        "sources": setup.sources,
    }


def score_lenient(result_rows: list[dict[str, Any]], sessions: list[Any], model_name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from wtb_local.protocols.harness_scoring import harness_metrics, score_rows_lenient
    from wtb_local.scoring import model_dir_name

    rows = score_rows_lenient(result_rows, sessions)
    return rows, harness_metrics(rows, sessions, model_dir_name(model_name))
