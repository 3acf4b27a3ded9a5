"""K2 Horizon parser: conformance in each call form, plus form checks, value typing and reasoning blocks."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from tests.parsers.conformance import TOOLS, ParserConformance
from wtb_local.formats.parsers import get_parser, select_parser

G, GC, C, CC = "<ifm|tool_calls>", "</ifm|tool_calls>", "<ifm|tool_call>", "</ifm|tool_call>"


def arg(key: str, value: str, kind: str | None = None) -> str:
    typed = f"<ifm|arg_type>{kind}</ifm|arg_type>" if kind else ""
    return f"<ifm|arg_key>{key}</ifm|arg_key>{typed}<ifm|arg_value>{value}</ifm|arg_value>"


class K2Cases(ParserConformance):
    parser_name = "k2_horizon"
    supports_reasoning = True
    reasoning_open_tag = "<ifm|think>"
    reasoning_close_tag = "</ifm|think>"

    def malformed_samples(self) -> dict[str, str]:
        return {
            "key_without_value": f"{G}{C}search<ifm|arg_key>query</ifm|arg_key>{CC}{GC}",
            "junk_block": f"{G}search(query=x){GC}",
            "unclosed_call": f"{G}{C}search{arg('query', 'x')}",
            "broken_json": f'{G}{C}{{"name": "search", "arguments": {{"query": }}{CC}{GC}',
        }

    def bad_then_good_sample(self) -> str:
        from tests.parsers.conformance import call

        good = self.parser.format(None, [call("search", {"query": "good"})]).removeprefix(G).removesuffix(GC)
        bad = (f'{C}{{"name": "search", "arguments": {{"query": }}{CC}' if self.parser_options
               and self.parser_options["tool_call_format"] == "json" else
               f"{C}search<ifm|arg_key>query</ifm|arg_key>{CC}")
        return f"{G}{bad}\n{good}{GC}"


class TestK2HorizonXml(K2Cases):
    pass


class TestK2HorizonXmlTyped(K2Cases):
    parser_options: ClassVar[dict[str, Any]] = {"tool_call_format": "xml_typed"}


class TestK2HorizonJson(K2Cases):
    parser_options: ClassVar[dict[str, Any]] = {"tool_call_format": "json"}


def calls(result) -> list[tuple[str, dict]]:
    return [(c.name, json.loads(c.arguments)) for c in result.tool_calls]


def test_the_asked_form_fails_closed_on_another() -> None:
    xml = f"{G}{C}search{arg('query', 'x')}{CC}{GC}"
    json_call = f'{G}{C}{{"name": "search", "arguments": {{"query": "x"}}}}{CC}{GC}'
    for form, text, other in (("json", xml, "xml"), ("xml", json_call, "json"), ("xml_typed", json_call, "json")):
        result = get_parser("k2_horizon", tool_call_format=form).parse(text, tools=TOOLS)
        assert (result.tool_calls, result.content, result.errors) == (
            [], text, [f"a call in the {other} form where the template asked for {form}: not read as a call"])
    # without the option each call's form is read from the text
    both = get_parser("k2_horizon").parse(xml + json_call, tools=TOOLS)
    assert (calls(both), both.errors) == ([("search", {"query": "x"}), ("search", {"query": "x"})], [])


def test_values_typed_by_the_wire_type_then_the_schema() -> None:
    obj = arg("o", '{"k": 1}')
    text = (f"{C}all_types{arg('s', '  spaced  ')}{arg('i', ' 42 ')}{arg('digits', '007', 'string')}"
            f"{arg('f', '3', 'integer')}{obj}{arg('z', '5', 'int')}{CC}")
    result = get_parser("k2_horizon").parse(text, tools=TOOLS)
    assert calls(result) == [("all_types", {"s": "  spaced  ", "i": 42, "digits": "007", "f": 3, "o": {"k": 1},
                                            "z": 5})]
    assert result.errors == []


def test_json_strings_retyped_only_where_the_schema_has_no_string() -> None:
    text = f'{C}{{"name": "all_types", "arguments": {{"b": "true", "s": "true", "x": "1"}}}}{CC}'
    result = get_parser("k2_horizon").parse(text, tools=TOOLS)
    assert calls(result) == [("all_types", {"b": True, "s": "true", "x": "1"})]
    as_written = f'{C}{{"name": "search", "arguments": {{"query":"x"}}}}{CC}'
    assert get_parser("k2_horizon").parse(as_written, tools=TOOLS).tool_calls[0].arguments == '{"query":"x"}'


def test_reasoning_blocks_by_effort() -> None:
    for effort, tag in (("high", "think"), ("medium", "think_fast"), ("low", "think_faster")):
        text = f"<ifm|{tag}>plan</ifm|{tag}>\n{G}{C}get_time{CC}{GC}"
        for parser in (get_parser("k2_horizon", reasoning_effort=effort), get_parser("k2_horizon")):
            result = parser.parse(text, tools=TOOLS)
            assert (result.reasoning, calls(result), result.content, result.errors) == (
                "plan", [("get_time", {})], None, []), (effort, parser.options)
        assert get_parser("k2_horizon", reasoning_effort=effort).format(None, [], "r").startswith(f"<ifm|{tag}>r")


def test_selection() -> None:
    assert select_parser("IFM/K2-Horizon-32B") == "k2_horizon"
    assert select_parser("any/model", chat_template="{{ '<ifm|tool_call>' + name }}") == "k2_horizon"


def test_a_prompt_that_opens_a_think_block_is_known() -> None:
    """A template that pre-fills one of the three blocks makes the run read the reply as starting inside it."""
    from wtb_local.formats.reasoning_blocks import closer_of, ends_in_open_reasoning

    for tag in ("think", "think_fast", "think_faster"):
        assert ends_in_open_reasoning(f"<ifm|user>hi<ifm|assistant><ifm|{tag}>")
        assert closer_of(f"<ifm|{tag}>") == f"</ifm|{tag}>"
    result = get_parser("k2_horizon", thinking=True, reasoning_effort="medium").parse(
        f"plan</ifm|think_fast>{G}{C}get_time{CC}{GC}", tools=TOOLS)
    assert (result.reasoning, calls(result)) == ("plan", [("get_time", {})])
