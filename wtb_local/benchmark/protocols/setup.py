"""The paper protocol's pieces (benchmark/protocols/paper.py puts them together): its renderer, its per-run setup
(dates and texts of the harness's conversation) and its scoring."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from wtb_local.benchmark.protocols.families import FamilyRule, build_prompt
from wtb_local.benchmark.protocols.history import paper_episodes
from wtb_local.contract.messages import ChatMessage, ToolSchema
from wtb_local.contract.run_dir import ManifestError, RunDir


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
    from wtb_local.formats.rendering.probe import PROBE_TOOLS  # deferred: start-up

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
        own = template or _own_template(tokenizer)
        if not isinstance(own, str) or not own:
            raise ValueError("paper protocol: the tokenizer has no chat template; pass --chat-template NAME|PATH")
        self.template: str = own
        self.template_kwargs = dict(template_kwargs or {})
        self.choice = PaperChoice(source, hashlib.sha256(self.template.encode("utf-8")).hexdigest(),
                                  f"paper protocol: the model's own template ({rule.name} prompt builder)")

    def render_text(self, messages: list[ChatMessage], tools: list[ToolSchema] | None) -> str:
        from wtb_local.formats.rendering.clock import conversation_date, render_chat  # deferred: start-up

        shaped, family_tools, kwargs = build_prompt(self.rule.name, messages, tools or [])
        # the clock reads the evaluator's conversation date: the family's builder may move that message
        return render_chat(self.tokenizer, self.template, shaped, family_tools, add_generation_prompt=True,
                           when=conversation_date(messages), **{**self.template_kwargs, **kwargs})

    def render(self, messages: list[ChatMessage], tools: list[ToolSchema] | None) -> RenderedText:
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


def recorded_special_tokens(result_file: str) -> list[str]:
    """The special tokens a recorded paper run removed before parsing (its manifest), for its replay."""
    found = RunDir.holding(result_file)
    try:
        manifest = found.manifest if found is not None else None
    except ManifestError:
        return []  # the replay itself refuses such a manifest in one line (contract/recorded.py)
    return list(manifest.protocol.special_tokens or []) if manifest is not None else []


def score_lenient(result_rows: list[dict[str, Any]], sessions: list[Any], model_name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from wtb_local.benchmark.protocols.harness_scoring import (  # deferred: start-up
        harness_metrics,
        score_rows_lenient,
    )
    from wtb_local.benchmark.scoring import model_dir_name

    rows = score_rows_lenient(result_rows, sessions)
    return rows, harness_metrics(rows, sessions, model_dir_name(model_name))
