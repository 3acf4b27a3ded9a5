"""DeepSeek DSML parsers (V3.2, V4, V4.1): conformance, the type marker, the generations' block names, and
what wtb_local does with the inputs of the known upstream DSML bugs."""

from __future__ import annotations

import json

from tests.parsers.conformance import TOOLS, ParserConformance
from wtb_local.formats.parsers import get_parser, parse_completion

D = "｜DSML｜"


def block(name: str, params: list[tuple[str, str, str]], kind: str = "function_calls", space: str = "") -> str:
    inner = "\n".join(f'<{D}{space}parameter name="{k}" string="{s}">{v}</{D}{space}parameter>' for k, s, v in params)
    return (f"<{D}{space}{kind}>\n<{D}{space}invoke name=\"{name}\">\n{inner}\n</{D}{space}invoke>\n"
            f"</{D}{space}{kind}>")


def calls(result) -> list[tuple[str, dict]]:
    return [(c.name, json.loads(c.arguments)) for c in result.tool_calls]


class _Dsml(ParserConformance):
    supports_reasoning = True
    kind = "function_calls"
    space = ""

    def malformed_samples(self) -> dict[str, str]:
        k, s = self.kind, self.space
        return {
            "nameless_invoke": f'<{D}{s}{k}>\n<{D}{s}invoke name="">\n</{D}{s}invoke>\n</{D}{s}{k}>',
            "not_json_marked_false": block("search", [("limit", "false", "three")], k, s),
            "block_without_invoke": f"<{D}{s}{k}>\nsearch(query=x)\n</{D}{s}{k}>",
            "unterminated_block": block("search", [("query", "true", "x")], k, s).rsplit("\n", 1)[0],
        }

    def bad_then_good_sample(self) -> str:
        k, s = self.kind, self.space
        return (f'<{D}{s}{k}>\n<{D}{s}invoke name="">\n</{D}{s}invoke>\n<{D}{s}invoke name="search">\n'
                f'<{D}{s}parameter name="query" string="true">good</{D}{s}parameter>\n</{D}{s}invoke>\n</{D}{s}{k}>')


class TestDeepSeekV32(_Dsml):
    parser_name = "deepseek_v32"


class TestDeepSeekV4(_Dsml):
    parser_name = "deepseek_v4"
    kind = "tool_calls"


class TestDeepSeekV41(_Dsml):
    parser_name = "deepseek_v41"
    kind = "calls"
    space = " "


# --- the type marker and the generations ---------------------------------------------------------------------


def test_the_string_marker_decides_the_type() -> None:
    text = block("all_types", [("i", "true", "42"), ("s", "false", "42"), ("n", "false", "null"), ("o", "false", '{"a": [1]}')])
    result = get_parser("deepseek_v32").parse(text, tools=TOOLS)
    assert calls(result) == [("all_types", {"i": "42", "s": 42, "n": None, "o": {"a": [1]}})] and result.errors == []


def test_a_string_keeps_its_whitespace_and_markup() -> None:
    text = block("write_note", [("text", "true", "  two\nlines <b>x</b> ")])
    assert calls(get_parser("deepseek_v32").parse(text)) == [("write_note", {"text": "  two\nlines <b>x</b> "})]


def test_no_marker_falls_back_to_the_schema() -> None:
    text = f'<{D}function_calls>\n<{D}invoke name="search">\n<{D}parameter name="limit">5</{D}parameter>\n</{D}invoke>\n</{D}function_calls>'
    assert calls(get_parser("deepseek_v32").parse(text, tools=TOOLS)) == [("search", {"limit": 5})]


def test_each_generation_reads_only_its_own_block() -> None:
    v32 = block("search", [("query", "true", "x")])
    v4 = block("search", [("query", "true", "x")], "tool_calls")
    v41 = block("search", [("query", "true", "x")], "calls", " ")
    read = {name: [bool(get_parser(name).parse(t).tool_calls) for t in (v32, v4, v41)]
            for name in ("deepseek_v32", "deepseek_v4", "deepseek_v41")}
    assert read == {"deepseek_v32": [True, False, False], "deepseek_v4": [False, True, False],
                    "deepseek_v41": [False, False, True]}
    result = get_parser("deepseek_v41").parse(v4)
    assert result.content == v4 and result.errors == [
        f"a <{D}tool_calls> block (DeepSeek-V4's) where this family writes <{D} calls>: not read as calls"]


def test_v41_reads_v4s_block_name_written_with_its_own_space() -> None:
    """vLLM's V4.1 parser accepts `<｜DSML｜ tool_calls>` (V4's name, V4.1's space) as its own block; V4's
    unspaced block stays another generation's (above), and V4.1's spaced DSML gives the V4 parser no call."""
    spaced_v4_name = block("search", [("query", "true", "x"), ("limit", "false", "2")], "tool_calls", " ")
    result = get_parser("deepseek_v41").parse(spaced_v4_name)
    assert (calls(result), result.content, result.errors) == ([("search", {"query": "x", "limit": 2})], None, [])
    v41 = block("search", [("query", "true", "x")], "calls", " ")
    by_v4 = get_parser("deepseek_v4").parse(v41)
    assert (by_v4.tool_calls, by_v4.content, by_v4.errors) == ([], v41, [
        f"a <{D}calls> block (DeepSeek-V4.1's) where this family writes <{D}tool_calls>: not read as calls"])


def test_thinking_prefilled() -> None:
    parser = get_parser("deepseek_v4", thinking=True)
    assert parser.parse("still thinking", finish_reason="length").reasoning == "still thinking"
    result = parser.parse("Plan.</think>Done.")
    assert (result.reasoning, result.content) == ("Plan.", "Done.")
    assert get_parser("deepseek_v4").parse("no think block").content == "no think block"


# --- the known upstream bugs: what wtb_local does with the same input ---------------------------------------


def test_nested_json_keeps_every_brace() -> None:
    """vllm#26897: V3.2 served with the V3.1 parser lost closing braces of nested objects."""
    text = "Plan.</think>\n\n" + block("all_types", [("o", "false", '{"k": [1, {"deep": {"x": 0.5}}], "e": {}}')])
    result = get_parser("deepseek_v32").parse(text, tools=TOOLS)
    assert calls(result) == [("all_types", {"o": {"k": [1, {"deep": {"x": 0.5}}], "e": {}}})]
    assert (result.reasoning, result.content, result.errors) == ("Plan.", None, [])


def test_misspelled_dsml_markers_are_read() -> None:
    """vllm#30541: the marker written with ASCII bars or spaces (`<| DSML |`) leaked the block as content."""
    for spelling in ("|DSML|", "| DSML |", "｜ DSML ｜"):
        text = "Checking.\n\n" + block("search", [("query", "true", "x")]).replace(D, spelling)
        result = get_parser("deepseek_v32").parse(text)
        assert (calls(result), result.content, result.errors) == ([("search", {"query": "x"})], "Checking.", [])


def test_v32_ids_select_the_v32_parser() -> None:
    """sglang#14690 / vllm#26897: which parser serves V3.2; the V3.1 parser reads no DSML call."""
    from wtb_local.formats.parsers import select_parser

    assert [select_parser(m) for m in ("deepseek-ai/DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2-Exp",
                                       "deepseek-ai/DeepSeek-V3.2-Speciale", "deepseek-ai/DeepSeek-V3.1")] == [
        "deepseek_v32", "deepseek_v32", "deepseek_v32", "deepseek_v31"]
    text = block("search", [("query", "true", "x")])
    assert get_parser("deepseek_v31").parse(text).tool_calls == []
    assert calls(get_parser("deepseek_v32").parse(text)) == [("search", {"query": "x"})]


def test_no_dsml_leaks_into_content() -> None:
    """vllm PR #40806 / #54686 and the leak cluster (#36654, #40800, #48089, #48931, #51914, #53227, #53831):
    the block never reaches the content, wherever it sits in the reply."""
    call = block("search", [("query", "true", "x")], "tool_calls")
    for text, content in [(f"Let me check. {call}", "Let me check."),
                          (f"{call}\nI will report back.", "I will report back."),
                          (f"Reasoning.</think>Answer first.\n\n{call}", "Answer first."),
                          (f"{call}{call}", None)]:
        result = get_parser("deepseek_v4").parse(text)
        assert result.content == content and D not in (result.content or ""), text
        assert all(c.name == "search" for c in result.tool_calls) and result.errors == []


def test_sglang_40236_shapes() -> None:
    """sglang#40236 returned DSML as content for a bare invoke, an unterminated section and a malformed
    sibling: wtb_local reads every call it can and names what is wrong."""
    parser = get_parser("deepseek_v4")
    good = f'<{D}invoke name="search">\n<{D}parameter name="query" string="true">x</{D}parameter>\n</{D}invoke>'
    bare = parser.parse(f"Sure. {good}")
    assert (calls(bare), bare.content, bare.errors) == (
        [("search", {"query": "x"})], "Sure.", [f"invoke outside a <{D}tool_calls> block; call(s) kept"])
    open_block = parser.parse(f"<{D}tool_calls>\n{good}")
    assert (calls(open_block), open_block.errors) == (
        [("search", {"query": "x"})], [f"no </{D}tool_calls> (an unterminated block); calls kept"])
    sibling = parser.parse(f'<{D}tool_calls>\n<{D}invoke name="search">\n<{D}parameter name="limit" '
                           f'string="false">three</{D}parameter>\n</{D}invoke>\n{good}\n</{D}tool_calls>')
    assert calls(sibling) == [("search", {"limit": "three"}), ("search", {"query": "x"})]
    assert sibling.errors == ["call 'search': parameter 'limit' is marked string=\"false\" but is not JSON; kept as text"]


def test_a_v4_reply_in_the_v32_block_name() -> None:
    """sglang#40236 (V4 emitting V3.2's `function_calls`; vLLM's test_function_calls_block_is_not_accepted):
    no call, as vLLM, but the step is an error naming the block, and its text stays content."""
    text = block("search", [("query", "true", "x")])
    result = get_parser("deepseek_v4").parse(text)
    assert (result.tool_calls, result.content) == ([], text)
    assert result.errors == [(f"a <{D}function_calls> block (DeepSeek-V3.2's) where this family writes "
                              f"<{D}tool_calls>: not read as calls")]


def test_a_call_inside_the_reasoning_is_counted_not_executed() -> None:
    """docs/parser-policies.md §1 for DSML: a block inside `<think>` is reasoning."""
    inner = block("search", [("query", "true", "inside")], "tool_calls")
    result = parse_completion(get_parser("deepseek_v4", thinking=True), f"Maybe {inner} no.</think>Done.",
                              tools=TOOLS, finish_reason="stop")
    assert (result.tool_calls, result.content, result.calls_in_reasoning) == ([], "Done.", 1)
