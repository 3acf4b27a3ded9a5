"""Mistral parsers (pre-v11 list and v11 per-call layouts): conformance suite plus family cases."""

from __future__ import annotations

import json
import re

from tests.parsers.conformance import ParserConformance, call
from wtb_local.formats.parsers import get_parser, select_parser
from wtb_local.formats.parsers.mistral import call_id


class MistralFamilyCases:
    def malformed_samples(self) -> dict[str, str]:
        return {
            "marker_without_json": "[TOOL_CALLS] not json at all",
            "broken_list_item": '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}',
            "v11_bad_json": '[TOOL_CALLS]get_weather[ARGS]{"city": Paris}',
            "list_of_non_objects": "[TOOL_CALLS][1, 2]",
            "nameless_object": '[TOOL_CALLS][{"arguments": {}}]',
        }

    def bad_then_good_sample(self) -> str:
        return '[TOOL_CALLS]get_weather[ARGS]{"city": Paris}[TOOL_CALLS]search[ARGS]{"query": "good"}'

    def test_both_generations_are_read(self) -> None:
        old = self.parse('[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1}, "id": "abcDEF123"}]')
        new = self.parse('[TOOL_CALLS]add[CALL_ID]abcDEF123[ARGS]{"a": 1}')
        plain = self.parse('[TOOL_CALLS]add{"a": 1}')
        for result in (old, new, plain):
            assert result.errors == [] and [(c.name, c.arguments) for c in result.tool_calls] == [("add", '{"a": 1}')]
        assert old.tool_calls[0].id == new.tool_calls[0].id == "abcDEF123"

    def test_format_writes_nine_char_ids(self) -> None:
        text = self.parser.format(None, [call("search", {"query": "x"}), call("get_time", {})])
        result = self.parse(text)
        assert all(re.fullmatch(r"[A-Za-z0-9]{9}", c.id or "") for c in result.tool_calls), (text, result)
        assert result.tool_calls[0].id != result.tool_calls[1].id

    def test_brackets_inside_strings(self) -> None:
        args = {"content": "```\nANSWER: [City Name] - [Weather] ]}\n```"}
        text = f'[TOOL_CALLS] [{{"name": "write_note", "arguments": {json.dumps(args)}}}]'
        result = self.parse(text)
        assert [json.loads(c.arguments) for c in result.tool_calls] == [args]

    def test_unparsable_arguments_kept_verbatim(self) -> None:
        raw = '{"command": "print(\\"hi\\")\\nre.compile(r\'{}\')'
        result = self.parse("hi{hi[TOOL_CALLS]bash" + raw)
        assert result.content == "hi{hi" and result.errors
        assert [(c.name, c.arguments) for c in result.tool_calls] == [("bash", raw)]


class TestMistral(MistralFamilyCases, ParserConformance):
    parser_name = "mistral"

    def test_selection(self) -> None:
        for model in ("mistralai/Mistral-7B-Instruct-v0.3", "mistralai/Mistral-Nemo-Instruct-2407",
                      "mistralai/Mixtral-8x7B-Instruct-v0.1"):
            assert select_parser(model) == "mistral"


class TestMistralV11(MistralFamilyCases, ParserConformance):
    parser_name = "mistral_v11"
    supports_reasoning = True
    reasoning_open_tag = "[THINK]"
    reasoning_close_tag = "[/THINK]"

    def test_selection(self) -> None:
        for model in ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistralai/Magistral-Small-2506",
                      "mistralai/Devstral-Small-2505"):
            assert select_parser(model) == "mistral_v11"


def test_call_id_is_stable() -> None:
    assert call_id("f", "{}", 0) == call_id("f", "{}", 0) != call_id("f", "{}", 1)
    assert get_parser("mistral").format(None, []) == ""


def test_format_replaces_ids_the_templates_would_reject() -> None:
    calls = [call("search", {"query": "x"}, call_id="call_0"), call("search", {"query": "y"}, call_id="Ab3dE6gH9")]
    for name in ("mistral", "mistral_v11"):
        parser = get_parser(name)
        ids = [c.id for c in parser.parse(parser.format(None, calls)).tool_calls]
        assert ids[1] == "Ab3dE6gH9" and ids[0] != "call_0" and re.fullmatch(r"[A-Za-z0-9]{9}", ids[0] or "")
