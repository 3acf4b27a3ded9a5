"""The conformance suite every tool-call parser passes: one mixin, inherited per parser.

    class TestHermes(ParserConformance):
        parser_name = "hermes"

Most inputs are written by the parser's own `format`, so the suite does not depend on the syntax. A bug
shared by `parse` and `format` would pass those, so `test_reads_real_outputs` also reads the real outputs of
tests/fixtures/parsers/ (texts no parser here wrote) that this parser reads, against the calls the fixtures'
own labels name.
Families add what only they can write through hooks:
- `malformed_samples()`: {case: text} replies that attempt a call that cannot be read; each must come
  back with errors (never as a clean plain-text answer);
- `bad_then_good_sample()`: one reply with a broken call followed by a good call to `search`; the good
  call must survive;
- `call_inside_reasoning(outer)`: a closed reasoning block holding a call (built from `format`).
Declared limitations go in `xfail_cases = {"test_name": "reason"}` (applied as pytest.xfail, so an
unexpected pass is visible in the report and nothing is skipped silently).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wtb_local.contract.schema import ParsedCall, ParseResult
from wtb_local.formats.parsers import get_parser, parse_completion, select_parser
from wtb_local.formats.parsers.base import ToolParser


def _tool(name: str, properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {"type": "object", "properties": properties, "required": required or []},
        },
    }


TOOLS: list[dict[str, Any]] = [
    _tool(
        "get_weather", {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}, ["city"]
    ),
    _tool("search", {"query": {"type": "string"}, "limit": {"type": "integer"}}, ["query"]),
    _tool(
        "all_types",
        {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "f": {"type": "number"},
            "b": {"type": "boolean"},
            "n": {"type": ["string", "null"]},
            "l": {"type": "array"},
            "o": {"type": "object"},
            "digits": {"type": "string"},
        },
    ),
    _tool("get_time", {}),
    _tool("write_note", {"text": {"type": "string"}}),
]

ALL_TYPES = {
    "s": "plain text",
    "i": 42,
    "f": -3.25,
    "b": True,
    "n": None,
    "l": [1, "two", False, None],
    "o": {"k": [1, {"deep": {"x": 0.5}}], "e": {}},
    "digits": "007",
}
UNICODE = {"text": 'He said "hi" \\ back — 杭州 ☃ 😀 <b>bold</b> {braces} [brackets] it\'s'}


def call(name: str, args: dict[str, Any], call_id: str | None = None) -> ParsedCall:
    return ParsedCall(id=call_id, name=name, arguments=json.dumps(args, ensure_ascii=False))


def same_content(got: str | None, want: str | None) -> bool:
    return (got or "").strip() == (want or "").strip()


def real_outputs(parser_name: str) -> list[tuple[str, str, dict[str, Any], list[dict[str, Any]]]]:
    """(sample id, text, parse keywords, labelled calls) of every real output in tests/fixtures/parsers/ that
    `parser_name` reads, with the options, tools and finish reason the sample modules read it with. Samples
    declared as a policy difference (each module's OURS) are left out: their label is not our result, and
    those modules assert our result exactly."""
    from tests.parsers import test_samples as release
    from tests.parsers import test_samples_2026h2_fam_a as h2_a
    from tests.parsers import test_samples_deepseek_glm_kimi_minimax as fam_a
    from tests.parsers import test_samples_gemma_qwen35_olmo as gemma

    found = []
    for index, sample in enumerate(release.SAMPLES, start=1):
        name = select_parser(sample["model"])
        if name == parser_name and index not in release.OURS:
            kwargs = {"options": release.OPTIONS.get(index, {}), "tools": sample.get("tools"),
                      "finish_reason": "stop"}
            found.append((f"output_samples.jsonl:{index}", sample["raw"], kwargs,
                          sample["expected"].get("tool_calls") or []))
    for line, sample in sorted(fam_a.SAMPLES.items()):
        if select_parser(sample["model"]) == parser_name and line not in fam_a.OURS:
            tools = [{"type": "function", "function": tool} for tool in sample.get("tools") or []] or None
            kwargs = {"options": {"thinking": True} if fam_a._prefilled(sample) else {}, "tools": tools,
                      "finish_reason": fam_a._finish(sample)}
            found.append((f"2026/fam_a_samples.jsonl:{line}", sample["text"], kwargs, sample["expected_calls"]))
    for line, sample in sorted(gemma.SAMPLES.items()):
        if sample["family"] == parser_name and line not in gemma.OURS:
            kwargs = {"options": gemma.OPTIONS.get(line, {}), "tools": sample.get("tools"),
                      "finish_reason": gemma.FINISH.get(line, "stop")}
            found.append((f"2026/gemma-qwen35-olmo.jsonl:{line}", sample["text"], kwargs, sample["expected_calls"]))
    from tests.parsers import test_samples_2026h2 as fam_b  # second-half 2026, group B

    for line, sample in sorted(fam_b.SAMPLES.items()):
        if fam_b.parser_name(sample) == parser_name and line not in fam_b.OURS:
            kwargs = {"options": fam_b.options(sample), "tools": fam_b.tools_of(sample), "finish_reason": "stop"}
            found.append((f"2026h2/fam_b_samples.jsonl:{line}", sample["text"], kwargs, sample["expected_calls"]))
    for line, sample in sorted(h2_a.SAMPLES.items()):
        if h2_a.PARSER[sample["family"]] == parser_name and line not in h2_a.OURS:
            kwargs = {"options": h2_a.options(sample), "tools": sample.get("tools"), "finish_reason": "stop"}
            found.append((f"2026h2/fam_a_samples.jsonl:{line}", sample["text"], kwargs, sample["expected_calls"]))
    return found


def labelled_calls_mismatch(got: ParseResult, want: list[dict[str, Any]]) -> str | None:
    """What differs between the parsed calls and a fixture's labelled ones: names always; arguments as JSON
    values when the label gives an object, as stripped text when it gives a string, the raw text when it gives
    `arguments_raw`; a label without arguments asserts the name only."""
    names = [c.name for c in got.tool_calls]
    if names != [w["name"] for w in want]:
        return f"calls {names} != {[w['name'] for w in want]}"
    for c, w in zip(got.tool_calls, want, strict=True):
        if "arguments_raw" in w and c.arguments != w["arguments_raw"]:
            return f"{c.name} raw arguments {c.arguments!r} != {w['arguments_raw']!r}"
        if isinstance(w.get("arguments"), str) and c.arguments.strip() != w["arguments"].strip():
            return f"{c.name} arguments {c.arguments!r} != {w['arguments']!r}"
        if isinstance(w.get("arguments"), dict):
            try:
                value = json.loads(c.arguments)
            except ValueError:
                return f"{c.name} arguments {c.arguments!r} are not JSON; the label is {w['arguments']}"
            if value != w["arguments"]:
                return f"{c.name} arguments {value} != {w['arguments']}"
    return None


class ParserConformance:
    parser_name: ClassVar[str]
    parser_options: ClassVar[dict[str, Any]] = {}
    supports_reasoning: ClassVar[bool] = False  # `format` writes a thinking block and `parse` splits it
    reasoning_open_tag: ClassVar[str] = "<think>"  # removed to test a prompt that pre-filled it
    reasoning_close_tag: ClassVar[str] = "</think>"
    xfail_cases: ClassVar[dict[str, str]] = {}
    # Why tests/fixtures/parsers/ holds no real output this parser reads (None: it holds some, and they count)
    no_real_outputs: ClassVar[str | None] = None

    # --- hooks ----------------------------------------------------------------------------------------

    def malformed_samples(self) -> dict[str, str]:
        return {}

    def bad_then_good_sample(self) -> str | None:
        return None

    def call_inside_reasoning(self, outer: list[ParsedCall]) -> str:
        """A reply whose closed reasoning block holds a call to `search` in the family's own markup, then
        the answer "Done." and the `outer` calls."""
        inner = self.parser.format(None, [call("search", {"query": "inside"})])
        if self.reasoning_close_tag in inner:  # formats that always open with a (here empty) reasoning block
            inner = inner.split(self.reasoning_close_tag, 1)[1]
        return self.parser.format("Done.", outer, f"Let me see. {inner.strip()} No, not yet.")

    # --- helpers --------------------------------------------------------------------------------------

    @pytest.fixture(autouse=True)
    def _declared_xfail(self, request: pytest.FixtureRequest) -> None:
        reason = self.xfail_cases.get(request.node.originalname)
        if reason:
            request.node.add_marker(pytest.mark.xfail(reason=reason, strict=True))

    @property
    def parser(self) -> ToolParser:
        return get_parser(self.parser_name, **self.parser_options)

    def parse(
        self, text: str, *, tools: list[dict[str, Any]] | None = TOOLS, finish_reason: str | None = "stop"
    ) -> ParseResult:
        # Calls the parser directly (not parse_completion): a raise must fail the suite.
        result = self.parser.parse(text, tools=tools, finish_reason=finish_reason)
        assert isinstance(result, ParseResult)
        return result

    def roundtrip(
        self, content: str | None, calls: list[ParsedCall], reasoning: str | None = None, **kw: Any
    ) -> ParseResult:
        text = self.parser.format(content, calls, reasoning)
        result = self.parse(text, **kw)
        assert result.errors == [], (text, result)
        self.assert_calls(result, calls, text)
        assert same_content(result.content, content), (text, result)
        if content is None or not content.strip():
            assert result.content is None, (text, result)
        return result

    def assert_calls(self, result: ParseResult, calls: list[ParsedCall], text: str = "") -> None:
        got = [(c.name, json.loads(c.arguments)) for c in result.tool_calls]
        want = [(c.name, json.loads(c.arguments)) for c in calls]
        assert got == want, (text, result)
        for c in result.tool_calls:
            # JSON-native formats keep the text as written; the others serialize with dumps_arguments.
            assert c.arguments in text or c.arguments == json.dumps(
                json.loads(c.arguments), ensure_ascii=False
            )

    # --- cases ----------------------------------------------------------------------------------------

    def test_registered(self) -> None:
        cls = type(self.parser)
        assert cls.name == self.parser_name
        assert cls.families and cls.model_patterns, "declare families and model_patterns"

    def test_no_call(self) -> None:
        result = self.roundtrip("The weather in Paris is sunny, 21 degrees.", [])
        assert result.tool_calls == []

    def test_empty_reply(self) -> None:
        result = self.parse("")
        assert result.tool_calls == [] and result.content is None and result.errors == []

    def test_one_call(self) -> None:
        self.roundtrip(None, [call("get_weather", {"city": "Paris", "unit": "c"})])

    def test_parallel_calls(self) -> None:
        self.roundtrip(
            None,
            [
                call("get_weather", {"city": "Paris"}),
                call("get_weather", {"city": "Rome"}),
                call("search", {"query": "museums", "limit": 3}),
            ],
        )

    def test_every_json_type(self) -> None:
        self.roundtrip(None, [call("all_types", ALL_TYPES)])

    def test_nested_objects_and_arrays(self) -> None:
        nested = {"o": {"a": {"b": {"c": [[1, 2], [3, {"d": []}]]}}}, "l": [{"x": {"y": None}}, [], {}]}
        self.roundtrip(None, [call("all_types", nested)])

    def test_empty_arguments(self) -> None:
        self.roundtrip(None, [call("get_time", {}), call("get_weather", {"city": "Oslo"})])

    def test_unicode_and_escaped_quotes(self) -> None:
        self.roundtrip(None, [call("write_note", UNICODE)])

    def test_text_before_calls(self) -> None:
        self.roundtrip("Let me check that for you.", [call("get_weather", {"city": "Paris"})])

    def test_text_after_calls(self) -> None:
        text = self.parser.format(None, [call("get_weather", {"city": "Paris"})]) + "\nI will report back."
        result = self.parse(text)
        assert result.errors == [], result
        self.assert_calls(result, [call("get_weather", {"city": "Paris"})], text)
        assert "I will report back." in (result.content or ""), result

    def test_unknown_tool_kept(self) -> None:
        self.roundtrip(
            None, [call("not_offered_tool", {"note": "kept anyway"}), call("get_weather", {"city": "Paris"})]
        )

    def test_without_tools(self) -> None:
        self.roundtrip("Checking.", [call("get_weather", {"city": "Paris"})], tools=None)

    def test_reasoning_with_calls(self) -> None:
        if not self.supports_reasoning:
            result = self.parse(self.parser.format("Hello.", [], "ignored reasoning"))
            assert result.reasoning is None
            return
        calls = [call("get_weather", {"city": "Paris"})]
        result = self.roundtrip("On it.", calls, "The user wants the weather; call get_weather.")
        assert result.reasoning == "The user wants the weather; call get_weather."

    def test_reasoning_only_answer(self) -> None:
        if not self.supports_reasoning:
            assert not self.parser_options.get("thinking"), "reasoning options without supports_reasoning"
            return
        result = self.roundtrip("Paris is sunny.", [], "Simple question, answer directly.")
        assert result.reasoning == "Simple question, answer directly."

    def test_reasoning_prefilled_open_tag(self) -> None:
        if not self.supports_reasoning:
            assert self.parse("plain answer").reasoning is None
            return
        text = self.parser.format("Answer.", [call("search", {"query": "x"})], "Thinking it over.")
        assert self.reasoning_open_tag in text
        text = text.replace(self.reasoning_open_tag, "", 1)
        result = self.parse(text)
        assert result.reasoning == "Thinking it over.", (text, result)
        self.assert_calls(result, [call("search", {"query": "x"})], text)
        assert same_content(result.content, "Answer."), result

    @pytest.mark.parametrize("outer", [[], [call("get_weather", {"city": "Paris"})]], ids=["alone", "then-a-call"])
    def test_call_inside_closed_reasoning_is_dropped_and_counted(self, outer: list[ParsedCall]) -> None:
        """docs/parser-policies.md §1, release protocol: reasoning is split off first and a call inside it
        is part of the reasoning, not a call (as vLLM's reasoning + tool parsers do); it is counted."""
        if not self.supports_reasoning:
            return
        text = self.call_inside_reasoning(outer)
        result = parse_completion(self.parser, text, tools=TOOLS, finish_reason="stop")
        assert result.errors == [], (text, result)
        self.assert_calls(result, outer, text)
        assert result.calls_in_reasoning == 1, (text, result)
        assert "search" in (result.reasoning or "") and "No, not yet." in (result.reasoning or ""), result
        assert same_content(result.content, "Done."), result

    def test_reads_real_outputs(self) -> None:
        """Texts a model or an upstream test wrote, not `format`: the calls must be the fixtures' labels."""
        samples = real_outputs(self.parser_name)
        if self.no_real_outputs:
            assert not samples, f"{len(samples)} real outputs are read by {self.parser_name}: drop no_real_outputs"
            return
        assert samples, f"no real output in tests/fixtures/parsers/ is read by {self.parser_name}"
        failures = []
        for sample_id, text, kwargs, want in samples:
            parser = get_parser(self.parser_name, **kwargs["options"])
            got = parser.parse(text, tools=kwargs["tools"], finish_reason=kwargs["finish_reason"])
            problem = labelled_calls_mismatch(got, want)
            if problem:
                failures.append(f"{sample_id}: {problem}")
        assert not failures, "\n".join(failures)

    def test_truncated_call(self) -> None:
        full = self.parser.format(
            None, [call("get_weather", {"city": "Paris"}), call("search", {"query": "Z" * 24})]
        )
        cut = full.index("Z" * 24) + 12
        result = self.parse(full[:cut], finish_reason="length")
        assert any("truncated tool call" in e for e in result.errors), (full[:cut], result)
        for c in result.tool_calls:  # complete calls may be kept, never the half one
            assert json.loads(c.arguments) == {"city": "Paris"}, result

    def test_malformed_samples(self) -> None:
        samples = self.malformed_samples()
        assert samples, "provide malformed_samples() for this family"
        for case, text in sorted(samples.items()):
            result = self.parse(text)
            assert result.errors, (case, text, result)

    def test_bad_call_keeps_good_ones(self) -> None:
        text = self.bad_then_good_sample()
        assert text, "provide bad_then_good_sample() for this family"
        result = self.parse(text)
        assert result.errors, (text, result)
        good = [c for c in result.tool_calls if c.name == "search"]
        assert good and json.loads(good[0].arguments) == {"query": "good"}, (text, result)

    def test_parse_completion_never_raises(self) -> None:
        class Exploding(type(self.parser)):  # type: ignore[misc, valid-type]
            def parse(self, text: str, **kw: Any) -> ParseResult:
                raise RuntimeError("boom")

        result = parse_completion(Exploding(), "whatever")
        assert result.errors and result.tool_calls == []

    @settings(
        max_examples=120,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
    )
    @given(data=st.data())
    def test_fuzz_never_raises(self, data: st.DataObject) -> None:
        sample = self.parser.format(
            "Hi.",
            [call("get_weather", {"city": "Paris"}), call("all_types", {"o": {"l": [1, "x"]}, "b": False})],
            None,
        )
        pieces = [sample[i : i + 5] for i in range(0, len(sample), 5)] + ["{", "}", "[", "]", '"', "'", "\\"]
        text = data.draw(
            st.one_of(
                st.text(max_size=200),
                st.lists(st.sampled_from(pieces), max_size=40).map("".join),
                st.integers(0, len(sample)).map(lambda n: sample[:n]),
            )
        )
        finish = data.draw(st.sampled_from(["stop", "length", None]))
        tools = data.draw(st.sampled_from([TOOLS, None]))
        result = self.parser.parse(text, tools=tools, finish_reason=finish)
        assert isinstance(result, ParseResult)
        for c in result.tool_calls:
            assert isinstance(c.name, str) and isinstance(c.arguments, str)
