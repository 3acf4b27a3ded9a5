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


# The same readings with the newest release's Python layer (WTB_VLLM_NEXT; .ci/run sets it), in a subprocess.
_AT_NEXT = """
import json, logging, sys, tempfile
from pathlib import Path
logging.disable(logging.CRITICAL)
import vllm
from tests.helpers.vllm_parity import build_tokenizer
from tests.parsers import test_vllm_native_decoding as t
with tempfile.TemporaryDirectory() as scratch:
    tok = build_tokenizer(Path(scratch))
    text = "Say <|python_tag|> ok<tool_call>" + json.dumps({"name": "get_weather", "arguments": {"city": "LA"}}) + "</tool_call>"
    print(json.dumps({"version": vllm.__version__, "file": vllm.__file__, "readings": [
        t.read("vllm:pythonic", tok, t.PYTHONIC), t.read("vllm:pythonic", tok, t.PYTHONIC, server_decoded=True),
        t.read("vllm:hermes", tok, text, tools=t.TOOLS), t.read("vllm:hermes", tok, text),
        t.read("vllm:hunyuan_a13b+hunyuan_a13b", tok, "<think>\\nPlan\\n</think>\\n<answer>\\nHello\\n</answer>",
               tools=t.TOOLS)]}))
"""


def test_the_newest_release_reads_as_its_server_does() -> None:
    """vLLM 0.34 (its unpacked layer): the same decoding and the reasoning parser composed as its server does."""
    import json
    import os
    import subprocess
    import sys

    path = os.environ.get("WTB_VLLM_NEXT")
    if not path or not (Path(path) / "vllm" / "__init__.py").is_file():
        why = "WTB_VLLM_NEXT does not name a folder holding the newest vLLM's `vllm` package (.ci/run unpacks its wheel)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(why)
        pytest.skip(why)
    repo = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([repo, path, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _AT_NEXT], capture_output=True, text=True, env=env, cwd=repo,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(report["file"]).resolve().is_relative_to(Path(path).resolve())
    call = [["get_weather", '{"city": "LA"}']]
    assert report["readings"] == [
        [None, None, call], [None, PYTHONIC, []],  # pythonic still leaves skip_special_tokens on in 0.34
        [None, "Say <|python_tag|> ok", call], [None, "Say  ok", call],
        ["Plan", "Hello", []]], report["version"]
