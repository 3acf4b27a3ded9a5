"""A call read from a block whose closing marker never came (a normal stop, not the token limit) is kept,
with an error naming the missing marker: the step still uses the call, the result file records why it is
suspect. At the token limit the same text is a truncated call (an error, no call) where the call itself is
incomplete."""

from __future__ import annotations

import pytest

from wtb_local.formats.parsers import get_parser

WEATHER = '{"city": "Paris"}'
# parser -> (completion missing its closing marker(s), the exact errors at a normal stop)
CASES: dict[str, tuple[str, list[str]]] = {
    "hermes": (f'<tool_call>\n{{"name": "get_weather", "arguments": {WEATHER}}}\n',
               ["tool call block 1: no </tool_call> (an unterminated block); call kept"]),
    "granite4": (f'<tool_call>\n{{"name": "get_weather", "arguments": {WEATHER}}}',
                 ["tool call block 1: no </tool_call> (an unterminated block); call kept"]),
    "glm45": ("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n",
              ["call 'get_weather': no </tool_call> (an unterminated block); call kept"]),
    "qwen3_coder": ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n",
                    ["unclosed <tool_call> block"]),
    "seed_oss": ("<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n",
                 ["unclosed <seed:tool_call> block"]),
    "minimax_m2": (('</think>\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris'
                    "</parameter>\n</invoke>\n"), ["unclosed <minimax:tool_call> block"]),
    "hunyuan": (f'<answer>\n<tool_calls>[{{"name": "get_weather", "arguments": {WEATHER}}}]',
                ["no </tool_calls> after the calls (an unterminated block); calls kept"]),
    "kimi_k2": (("<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
                 f"<|tool_call_argument_begin|>{WEATHER}"),
                ["call 1 (get_weather): no <|tool_call_end|> (an unterminated call); call kept",
                 "no <|tool_calls_section_end|> (an unterminated section); calls kept"]),
    "deepseek_v3": (("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
                     f"{WEATHER}\n```<｜tool▁call▁end｜>"),
                    ["no <｜tool▁calls▁end｜> (an unterminated section); calls kept"]),
    "deepseek_v31": (f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{WEATHER}",
                     ["tool call to get_weather without <｜tool▁call▁end｜>",
                      "no <｜tool▁calls▁end｜> (an unterminated section); calls kept"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_call_from_an_unterminated_block_is_kept_with_an_error(name: str) -> None:
    text, errors = CASES[name]
    result = get_parser(name).parse(text, finish_reason="stop")
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("get_weather", WEATHER)]
    assert result.errors == errors


def test_the_second_of_two_blocks_unterminated_names_that_block() -> None:
    text = ('<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n'
            f'<tool_call>\n{{"name": "get_weather", "arguments": {WEATHER}}}')
    result = get_parser("hermes").parse(text, finish_reason="stop")
    assert [c.name for c in result.tool_calls] == ["a", "get_weather"]
    assert result.errors == ["tool call block 2: no </tool_call> (an unterminated block); call kept"]


@pytest.mark.parametrize("name", ["hermes", "glm45", "qwen3_coder", "kimi_k2"])
def test_an_incomplete_call_at_the_token_limit_is_an_error_without_a_call(name: str) -> None:
    text = CASES[name][0]
    cut = text[: text.index("Paris") + 2]  # mid-argument
    result = get_parser(name).parse(cut, finish_reason="length")
    assert result.tool_calls == [] and len(result.errors) == 1 and "truncated tool call" in result.errors[0]
