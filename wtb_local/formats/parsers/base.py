"""The one interface every tool-call parser implements, plus helpers they share.

A parser turns a raw completion (special tokens kept) into reasoning, content and tool calls, and never
raises. `format` is its inverse: it writes calls in the family's native text, used by the oracle backend
and by the conformance suite's round trips.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from wtb_local.contract.messages import ToolSchema
from wtb_local.contract.schema import ParsedCall, ParseResult


class ToolParser(ABC):
    name: ClassVar[str]  # registry name, e.g. "hermes"
    # vLLM's `--tool-call-parser` names this parser mirrors (empty: vLLM has none); the registry accepts
    # each as an alias when it is not itself a registry name and names one parser only.
    vllm_names: ClassVar[tuple[str, ...]] = ()
    families: ClassVar[tuple[str, ...]] = ()  # human-readable families, e.g. ("Qwen2.5", "Qwen3")
    model_patterns: ClassVar[tuple[str, ...]] = ()  # regexes matched (re.search) against the lowercased model id
    template_markers: ClassVar[tuple[str, ...]] = ()  # substrings of a chat template that identify the format
    priority: ClassVar[int] = 0  # tie-break when several parsers match a model id: higher wins
    # Set by `get_parser` from the `per_step` option (formats/parsers/prefill.py reads it).
    per_step_prefill: bool = False

    def __init__(self, **options: Any) -> None:
        self.options = options

    @abstractmethod
    def parse(self, text: str, *, tools: list[ToolSchema] | None = None,
              finish_reason: str | None = None) -> ParseResult:
        """Split `text` into reasoning, content and calls. `finish_reason == "length"` with an unclosed
        call is a parse error. `tools` lets schema-typed formats (XML parameters) type their values."""

    @abstractmethod
    def format(self, content: str | None, tool_calls: list[ParsedCall],
               reasoning: str | None = None) -> str:
        """The raw completion a model of this family would write for this reply."""


def dumps_arguments(value: Any) -> str:
    """Arguments text for formats that are not JSON (docs/evaluation.md §5): json.dumps with
    ensure_ascii=False."""
    return json.dumps(value, ensure_ascii=False)
