"""`vllm:NAME` reads a completion the way vLLM's server does (wtb_local/formats/parsers/vllm_native.py): the
special tokens are removed where the parser's `adjust_request` leaves `skip_special_tokens` on (vLLM's
detokenizer drops them; our engines keep them), and `vllm:TOOL+REASONING` runs the reasoning parser and the
tool parser composed by vLLM's `ParserManager`, as `--reasoning-parser` does. Read with the installed vLLM
and the parity test's stand-in tokenizer (tests/helpers/vllm_parity.py); imports vLLM, starts no engine."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.tiers import needs_vllm

pytestmark = [pytest.mark.vllm, needs_vllm]

PYTHONIC = "<|python_start|>[get_weather(city='LA')]<|python_end|>"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.helpers.vllm_parity import build_tokenizer

    return build_tokenizer(Path(tmp_path_factory.mktemp("standin")))


def read(name: str, tokenizer: Any, text: str, *, tools: list[dict[str, Any]] | None = None,
         server_decoded: bool = False, **options: Any) -> tuple[Any, Any, list[tuple[str, str]]]:
    from wtb_local.formats.parsers.vllm_native import build

    result = build(name, tokenizer, server_decoded=server_decoded, **options).parse(text, tools=tools)
    return result.reasoning, result.content, [(c.name, c.arguments) for c in result.tool_calls]


def test_special_tokens_are_removed_where_the_request_still_skips_them() -> None:
    from wtb_local.formats.parsers.vllm_native import decoded

    tok = SimpleNamespace(all_special_tokens=["<|python_start|>", "<|python_end|>"], added_tokens_decoder={})
    text = "a<|python_start|>b<|python_end|>c"
    assert decoded(text, SimpleNamespace(skip_special_tokens=True), tok) == "abc"
    assert decoded(text, SimpleNamespace(skip_special_tokens=None), tok) == "abc"  # 0.34's unset field: the default
    assert decoded(text, SimpleNamespace(skip_special_tokens=False), tok) == text


def test_a_parser_that_keeps_skipping_reads_the_text_without_special_tokens(tokenizer: Any) -> None:
    """vLLM's pythonic parser leaves `skip_special_tokens` on: the server hands it the list without Llama 4's
    `<|python_start|>`/`<|python_end|>` (special tokens), and it reads the call; handed the raw text (as the
    parity samples are), it reads none (vllm-project/vllm#22917)."""
    call = [("get_weather", '{"city": "LA"}')]
    assert read("vllm:pythonic", tokenizer, PYTHONIC) == (None, None, call)
    assert read("vllm:pythonic", tokenizer, PYTHONIC, server_decoded=True) == (None, PYTHONIC, [])


def test_a_parser_that_turns_skipping_off_reads_the_special_tokens(tokenizer: Any) -> None:
    """hermes turns `skip_special_tokens` off for a request with tools: a special token in its text stays."""
    text = 'Say <|python_tag|> ok<tool_call>{"name": "get_weather", "arguments": {"city": "LA"}}</tool_call>'
    call = [("get_weather", '{"city": "LA"}')]
    assert read("vllm:hermes", tokenizer, text, tools=TOOLS) == (None, "Say <|python_tag|> ok", call)
    assert read("vllm:hermes", tokenizer, text) == (None, "Say  ok", call)  # no tools: skipped


def test_the_reasoning_parser_runs_as_the_server_composes_it(tokenizer: Any) -> None:
    """`vllm:hunyuan_a13b+hunyuan_a13b`: Hunyuan's <answer> wrapper is the reasoning parser's, so the tool
    parser reads the answer; without it the wrapper reaches the tool parser as text."""
    text = "<think>\nPlan\n</think>\n<answer>\nHello\n</answer>"
    assert read("vllm:hunyuan_a13b+hunyuan_a13b", tokenizer, text, tools=TOOLS) == ("Plan", "Hello", [])
    assert read("vllm:hunyuan_a13b", tokenizer, text, tools=TOOLS) == ("Plan", "<answer>\nHello\n</answer>", [])


def test_names_and_set_up_errors() -> None:
    from wtb_local.formats.parsers.vllm_native import VllmParserSetupError, build, reasoning_name, vllm_name

    assert (vllm_name("vllm:hermes+qwen3"), reasoning_name("vllm:hermes+qwen3")) == ("hermes", "qwen3")
    assert (vllm_name("vllm:hermes"), reasoning_name("vllm:hermes")) == ("hermes", None)
    with pytest.raises(VllmParserSetupError, match=r"^vLLM \S+ has no reasoning parser 'no_such'; its reasoning "
                                                   r"parsers: .*\bqwen3\b"):
        build("vllm:hermes+no_such", object())
