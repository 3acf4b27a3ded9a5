"""The paper protocol: how the paper's open-model numbers were produced by the authors' harness
(docs/evaluation.md): the family's prompt builder over the model's own template, the family's generation
settings and parse rule, the harness's conversation, and the lenient checker."""

from __future__ import annotations

from typing import Any

from wtb_local.benchmark.protocols.base import Protocol, ProtocolRun
from wtb_local.benchmark.protocols.families import RULES, FamilyRule, family_for


class PaperProtocol(Protocol):
    name = "paper"
    checker = "lenient"
    hash_value = "paper"
    reproduces_paper = True
    calls_in_reasoning = "read as calls, as the paper harness does"
    format_deviations = "not read as calls by the family's parse rule, as in the paper harness"
    uses_template_overrides = False

    def family(self, values: dict[str, Any]) -> FamilyRule:
        """`--paper-family`, else the family of the model id (or the run's model name)."""
        if values.get("paper_family"):
            return RULES[values["paper_family"]]
        return family_for(values.get("model") or values.get("model_name") or "")

    def default_parser(self, values: dict[str, Any]) -> str | None:
        """The project parser standing in for a documented family's rule before the rule replaces it (so a
        family without a project parser, e.g. Gorilla, needs no --parser); None for the generic rule."""
        from wtb_local.benchmark.protocols.parse_rules import NATIVE  # deferred: start-up

        rule = self.family(values)
        return NATIVE.get(rule.parse_rule) if rule.parse_rule != "native" else None

    def sampling(self, values: dict[str, Any], sources: dict[str, str], options: Any, stderr: Any) -> None:
        """The family's generation length and sampling (docs/evaluation.md, the paper protocol's generation)
        replace the run's; a value the user gave that differs is named in one warning line."""
        rule = self.family(values)
        fixed = {"max_new_tokens": rule.max_new_tokens,
                 "temperature": 0.0 if rule.sampling == "greedy" else None, "top_p": None}
        why = f"protocol paper (family {rule.name})"
        replaced = []
        for name, value in fixed.items():
            before = values[name]
            if name in options.given and before != value:
                flag = options.source(name).removeprefix("given (").removesuffix(")")
                shown = "the model's default" if value is None else value
                replaced.append(f"{flag} {before} with {shown}")
                sources[name] = f"{why}, replacing the given {before}"
            else:
                sources[name] = why
            values[name] = value
        if replaced:
            print(f"warning: --protocol paper uses the {rule.name} family's generation settings: replaced "
                  f"{', '.join(replaced)}", file=stderr)

    def apply(self, values: dict[str, Any], *, renderer: Any, parser: Any, selected: list[Any],
              parses_replies: bool) -> ProtocolRun:
        from wtb_local.benchmark.protocols.dates import DateError, task_dates
        from wtb_local.benchmark.protocols.history import task_texts
        from wtb_local.benchmark.protocols.parse_rules import PaperParser  # deferred: start-up
        from wtb_local.benchmark.protocols.setup import PaperRenderer, PaperSetup, recorded_special_tokens

        rule = self.family(values)
        dates: dict[str, list[str]] = {}
        texts: dict[str, list[str]] = {}
        sources: dict[str, dict[str, int]] = {"date": {}, "user_text": {}}
        for session in selected:
            try:
                dates[session.id], date_source = task_dates(session)
            except (DateError, ValueError) as exc:
                raise ValueError(f"--protocol paper: {exc}") from None
            texts[session.id], text_source = task_texts(session)
            sources["date"][date_source] = sources["date"].get(date_source, 0) + 1
            sources["user_text"][text_source] = sources["user_text"].get(text_source, 0) + 1
        special: list[str] = []
        template_sha256 = None
        if renderer is not None:
            tokenizer = renderer.tokenizer
            renderer = PaperRenderer(tokenizer, rule, template=_explicit_template(values.get("chat_template")),
                                     template_kwargs=values.get("template_kwargs"),
                                     source="path/override" if values.get("chat_template") else "tokenizer")
            special = list(getattr(tokenizer, "all_special_tokens", []) or [])
            template_sha256 = renderer.choice.sha256
        elif values.get("replay"):
            special = recorded_special_tokens(values["replay"])
        parser_name = None
        if parses_replies:
            if rule.parse_rule == "native" and parser is None:
                raise ValueError("--protocol paper: no tool-call parser for this model; pass --parser")
            parser = PaperParser(rule.parse_rule, special_tokens=special,
                                 native=parser if rule.parse_rule == "native" else None)
            parser_name = parser.name
        setup = PaperSetup(rule, dates, texts, sources, special)
        return ProtocolRun(renderer, parser, setup.episodes_for, self.section(setup, values), template_sha256,
                           parser_name, setup)

    def planned_parser(self, values: dict[str, Any], native: Any) -> tuple[str, str]:
        from wtb_local.benchmark.protocols.parse_rules import PaperParser  # deferred: start-up

        rule = self.family(values)
        parser = PaperParser(rule.parse_rule, special_tokens=[], native=native if rule.parse_rule == "native" else None)
        # an inferred rule is a fact about the comparison, not a problem with the run: the label says it
        return parser.name, f"{rule.name} ({'documented' if rule.documented else 'inferred'})"

    def section(self, setup: Any, values: dict[str, Any]) -> dict[str, Any]:
        """The manifest's `protocol` key: the protocol, its checker and every per-family setting applied."""
        rule = setup.rule
        return {
            "name": self.name,
            "checker": self.checker,
            "family": rule.describe(),
            "documented": rule.documented,
            "inferred": [] if rule.documented else [f"family rule {rule.name}: {rule.source}"],
            "generation": {"max_new_tokens": values["max_new_tokens"],
                           "sampling": rule.sampling, "temperature": values["temperature"],
                           "decoding": "special tokens removed before parsing (skip_special_tokens=True)"},
            "special_tokens": sorted(setup.special_tokens),  # removed before parsing; a replay reuses them
            "tool_results": rule.tool_results,
            "parse_rule": rule.parse_rule,
            "sources": setup.sources,
        }

    def step_episodes(self, session: Any, model: str) -> list[Any]:
        from wtb_local.benchmark.protocols.dates import task_dates
        from wtb_local.benchmark.protocols.history import paper_episodes, task_texts

        return paper_episodes(session, dates=task_dates(session)[0], texts=task_texts(session)[0],
                              tool_results=family_for(model).tool_results)

    def step_renderer(self, renderer: Any, model: str, *, chat_template_given: bool) -> Any:
        from wtb_local.benchmark.protocols.setup import PaperRenderer  # deferred: start-up

        return PaperRenderer(renderer.tokenizer, family_for(model),
                             template=renderer.template if chat_template_given else None,
                             template_kwargs=renderer.template_kwargs)


def _explicit_template(chat_template: str | None) -> str | None:
    if not chat_template:
        return None
    from wtb_local.formats.rendering.templates import resolve_template  # deferred: start-up

    return resolve_template(chat_template)[1]
