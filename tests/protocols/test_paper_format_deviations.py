"""What the paper protocol's parse rules do with calls written in a foreign wrapper, and what is counted as a
format deviation under them (docs/parser-policies.md §3, the table of the paper protocol): every rule of
`protocols/parse_rules.py` on every kind, through `parse_completion` as a run reads a step."""

from __future__ import annotations

import pytest

from wtb_local.benchmark.protocols.parse_rules import EMPTY_LIST_TEXT, HAMMER_PLACEHOLDER, RULES, PaperParser
from wtb_local.formats.parsers import get_parser, parse_completion

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}]
CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
TEXTS = {
    "fenced": f"```json\n{CALL}\n```",
    "fenced list": f"```\n[{CALL}]\n```",  # no language tag: what the Hammer rule looks for
    "bare": CALL,
    "bare list": f"[{CALL}]",
    "llama": '{"type": "function", "name": "get_weather", "parameters": {"city": "Paris"}}',
    "mistral": f"[TOOL_CALLS][{CALL}]",
}
# What each rule makes of each reply: "call" (read as one call), "text" (the reply's text, judged as a text
# reply), "placeholder" (the Hammer rule's fixed text), "empty list" (the pythonic rule's text for a list
# without calls), "error" (a step error); and the format deviation counted (None: none).
OUTCOMES = {
    "qwen": {"fenced": ("text", "fenced_json"), "fenced list": ("text", "fenced_json"), "bare": ("text", "bare_json"),
             "bare list": ("text", "bare_json"), "llama": ("text", "bare_json"), "mistral": ("text", "format:mistral")},
    # the rule's own format is plain JSON: the JSON kinds are its family's, not deviations
    "llama": {"fenced": ("text", None), "fenced list": ("text", None), "bare": ("text", None),
              "bare list": ("text", None), "llama": ("call", None), "mistral": ("text", None)},
    "hammer": {"fenced": ("placeholder", None), "fenced list": ("call", None), "bare": ("placeholder", None),
               "bare list": ("placeholder", None), "llama": ("placeholder", "bare_json"),
               "mistral": ("placeholder", None)},
    "pythonic": {"fenced": ("text", "fenced_json"), "fenced list": ("text", "fenced_json"),
                 "bare": ("text", "bare_json"), "bare list": ("empty list", "bare_json"),
                 "llama": ("text", "bare_json"), "mistral": ("error", "format:mistral")},
    "xlam2": {"fenced": ("text", None), "fenced list": ("text", None), "bare": ("text", None),
              "bare list": ("call", None), "llama": ("text", "bare_json"), "mistral": ("text", None)},
    "fcm": {"fenced": ("text", "fenced_json"), "fenced list": ("text", "fenced_json"), "bare": ("text", "bare_json"),
            "bare list": ("text", "bare_json"), "llama": ("text", "bare_json"), "mistral": ("text", "format:mistral")},
    "gorilla": {"fenced": ("text", "fenced_json"), "fenced list": ("text", "fenced_json"),
                "bare": ("text", "bare_json"), "bare list": ("text", "bare_json"), "llama": ("text", "bare_json"),
                "mistral": ("text", "format:mistral")},
    # the generic rule around the family's parser (here hermes): as the release protocol, think text kept
    "native": {"fenced": ("text", "fenced_json"), "fenced list": ("text", "fenced_json"),
               "bare": ("text", "bare_json"), "bare list": ("text", "bare_json"), "llama": ("text", "bare_json"),
               "mistral": ("text", "format:mistral")},
}


def _outcome(rule: str, text: str) -> tuple[str, str | None]:
    parser = PaperParser(rule, native=get_parser("hermes") if rule == "native" else None)
    result = parse_completion(parser, text, tools=TOOLS)
    if result.tool_calls:
        assert [call.name for call in result.tool_calls] == ["get_weather"] and not result.errors
        what = "call"
    elif result.errors:
        what = "error"
    else:
        what = {text: "text", HAMMER_PLACEHOLDER: "placeholder", EMPTY_LIST_TEXT: "empty list"}[result.content]
    deviation = result.format_deviation
    assert deviation is None or deviation.calls == 1
    return what, deviation.kind if deviation else None


@pytest.mark.parametrize("rule", [*RULES, "native"])
def test_each_rule_on_each_kind(rule: str) -> None:
    assert {kind: _outcome(rule, text) for kind, text in TEXTS.items()} == OUTCOMES[rule]
