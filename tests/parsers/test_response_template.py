"""The metadata-driven `response_template` parser (vLLM's `hf`): conformance on a delimited template and on
Gemma 4's published metadata, the content parsers, and selection from a checkpoint's tokenizer_config.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.parsers.conformance import TOOLS, ParserConformance, call
from wtb_local.contract.errors import RunError
from wtb_local.formats.parsers import get_parser, parser_class

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "parsers" / "2026h2" / "fam_a_samples.jsonl"
# Gemma 4's metadata as vLLM's test of the parser carries it (the `hf` rows of the collected samples)
GEMMA4 = next(row["response_template"] for row in map(json.loads, FIXTURE.read_text(encoding="utf-8").splitlines())
              if row["family"] == "hf" and row["model"] == "google/gemma-4-31B-it")
DELIMITED = {
    "start_anchor": "<assistant>",
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open": "<call>", "close": "</call>", "content": "json", "repeats": True},
    },
}


class MetadataCases(ParserConformance):
    def test_reasoning_prefilled_open_tag(self) -> None:
        """A prompt that opens the reasoning field (the run's `thinking` option) starts the reply inside it."""
        text = self.parser.format("Answer.", [call("search", {"query": "x"})], "Thinking it over.")
        text = text.replace(self.reasoning_open_tag, "", 1)
        result = get_parser(self.parser_name, **self.parser_options, thinking=True).parse(text, tools=TOOLS)
        assert (result.reasoning, result.content, result.errors) == ("Thinking it over.", "Answer.", [])
        self.assert_calls(result, [call("search", {"query": "x"})], text)


class TestDelimited(MetadataCases):
    parser_name = "response_template"
    parser_options: ClassVar[dict[str, Any]] = {"response_template": DELIMITED}
    supports_reasoning = True

    def malformed_samples(self) -> dict[str, str]:
        return {"not_json": "<call>search(query=x)</call>", "no_name": '<call>{"arguments": {}}</call>',
                "unclosed": '<call>{"name": "search", "arguments": {"query": }'}

    def bad_then_good_sample(self) -> str:
        return '<call>{"name": "search", "arguments": {"query": }</call><call>{"name": "search", "arguments": {"query": "good"}}</call>'

    def test_registered(self) -> None:
        """Chosen from a checkpoint's metadata, never from a model id: no id patterns to declare."""
        cls = parser_class("response_template")
        assert cls.families and cls.model_patterns == () and parser_class("hf") is cls


class TestGemma4Metadata(MetadataCases):
    parser_name = "response_template"
    parser_options: ClassVar[dict[str, Any]] = {"response_template": GEMMA4}
    supports_reasoning = True
    reasoning_open_tag = "<|channel>thought\n"
    reasoning_close_tag = "<channel|>"

    def malformed_samples(self) -> dict[str, str]:
        return {"junk_after": '<|tool_call>call:search{query:<|"|>x<|"|>}junk<tool_call|>'}

    def bad_then_good_sample(self) -> str:
        return ('<|tool_call>call:search{query:}<tool_call|>'
                '<|tool_call>call:search{query:<|"|>good<|"|>}<tool_call|>')

    def test_registered(self) -> None:
        assert parser_class("response_template").model_patterns == ()


def calls(result: Any) -> list[tuple[str, Any]]:
    return [(c.name, json.loads(c.arguments)) for c in result.tool_calls]


def test_gemma4_metadata_reads_its_dialect() -> None:
    text = ('<|channel>thought\nplan<channel|><|tool_call>call:configure{enabled:false,ratio:5.0,label:<|"|>a, b<|"|>}'
            '<tool_call|>Done.<turn|>ignored')
    result = get_parser("hf", response_template=GEMMA4).parse(text, tools=TOOLS)
    assert (result.reasoning, calls(result), result.content, result.errors) == (
        "plan", [("configure", {"enabled": False, "ratio": 5.0, "label": "a, b"})], "Done.", [])


def test_content_parsers_and_transforms() -> None:
    template = {"start_anchor": "<a>", "fields": {
        "tool_calls": {"open_pattern": r"<fn (?P<name>[\w.]+)>", "close": "</fn>", "content": "xml-inline",
                       "content_args": {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
                                        "value_parser": {"name": "json", "args": {"allow_non_json": True}}},
                       "transform": {"function": {"name": "{name}", "arguments": "{content}"}}},
        "content": {"close": "<eot>"}}}
    text = "Sure.<fn search><query>rome</query><limit>3</limit></fn><eot>after the end"
    result = get_parser("response_template", response_template=json.dumps(template)).parse(text, tools=TOOLS)
    assert (calls(result), result.content, result.errors) == ([("search", {"query": "rome", "limit": 3})], "Sure.", [])


def test_without_metadata_or_with_broken_metadata_the_step_is_an_error() -> None:
    assert get_parser("response_template").parse("hi").errors == [
        ("the response_template parser needs the checkpoint's response_template metadata (tokenizer_config.json), "
         "and none was given")]
    broken = get_parser("response_template", response_template={"fields": {"a": {}, "b": {}}}).parse("hi")
    assert broken.errors == ["response_template: fields ['a', 'b'] all lack an opener"]


def test_a_checkpoint_declaring_its_format_needs_no_code(tmp_path: Path) -> None:
    """A local checkpoint no parser knows by id, whose tokenizer_config.json declares a response_template, is
    read by `response_template` with that metadata (run/setup/parser_choice.py)."""
    from wtb_local.run.setup.parser_choice import choose_parser

    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"response_template": DELIMITED}), encoding="utf-8")
    parser, options = choose_parser(None, model=str(tmp_path), renderer=None)
    assert (parser.name, options) == ("response_template", {"response_template": DELIMITED})
    result = parser.parse('<think>p</think>ok<call>{"name": "search", "arguments": {"query": "x"}}</call>')
    assert (result.reasoning, result.content, calls(result)) == ("p", "ok", [("search", {"query": "x"})])

    class Tokenizer:  # metadata a loaded tokenizer carries among its init kwargs
        init_kwargs: ClassVar[dict[str, Any]] = {"response_template": GEMMA4}

    class Renderer:
        tokenizer = Tokenizer()
        template = "no markers"
        template_kwargs: ClassVar[dict[str, Any]] = {}

    _, from_tokenizer = choose_parser("hf", model="org/unknown-model", renderer=Renderer(), options={"x": 1})
    assert from_tokenizer == {"x": 1, "response_template": GEMMA4}
    with pytest.raises(RunError, match="no tool-call parser matches"):
        choose_parser(None, model=str(tmp_path / "nothing-here"), renderer=None)


def test_reasoning_cut_off_is_reasoning_without_an_error() -> None:
    for options in ({}, {"thinking": True}):
        text = "<think>still going" if not options else "still going"
        result = get_parser("response_template", response_template=DELIMITED, **options).parse(
            text, finish_reason="length")
        assert (result.reasoning, result.content, result.errors) == ("still going", None, []), options


def test_zero_width_anchors_never_loop() -> None:
    template = {"start_anchor": "<a>", "fields": {
        "tool_calls": {"open_pattern": r"(?=<call>)|<call>", "close_pattern": r"(?=<)|$", "content": "json"},
        "content": {"close_pattern": "$"}}}
    result = get_parser("response_template", response_template=template).parse(
        'Hi <call>{"name": "search", "arguments": {"query": "x"}}')
    assert (calls(result), result.content) == ([("search", {"query": "x"})], "Hi")


# A chat template of a family no parser knows: calls as `<call>{json}</call>`, replies after `<assistant>`.
NEW_FAMILY = (
    "{%- if tools %}<|system|>Tools: {{ tools | tojson }}<|end|>{% endif -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'assistant' -%}<assistant>{{ m.content or '' }}"
    "{%- for tc in m.tool_calls or [] -%}<call>{{ {'name': tc.function.name, 'arguments': tc.function.arguments}"
    " | tojson }}</call>{%- endfor -%}<|end|>"
    "{%- else -%}<|{{ m.role }}|>{{ m.content }}<|end|>{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<assistant>{%- endif -%}")


def test_a_new_family_declaring_its_format_runs_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint whose architecture (qwen2) would select hermes, whose template no parser knows, and whose
    tokenizer_config.json declares its response_template: the probe and the run read it by the metadata, and
    the oracle scores 100% with every reply cut out of the template."""
    import asyncio

    from tests.helpers import build_tiny_model
    from wtb_local.run import RunOptions, run_job_async

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model_dir = build_tiny_model(tmp_path / "org" / "new-family-1b", NEW_FAMILY, eos_token="<|end|>")
    config_path = model_dir / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config_path.write_text(json.dumps({**config, "response_template": DELIMITED}), encoding="utf-8")
    settings = RunOptions(backend="oracle", model=str(model_dir), dataset="sample", out=str(tmp_path / "run"),
                          progress="none")
    outcome = asyncio.run(run_job_async(settings))
    total = outcome.metric["total_info"]
    assert (total["task"]["accuracy"], total["session"]["accuracy"]) == (1.0, 1.0), total
    assert (outcome.settings.parser, outcome.manifest["template"]["source"]) == ("response_template", "tokenizer")
    assert (outcome.manifest["backend"]["template_cuts"], outcome.manifest["backend"]["format_fallbacks"]) == (74, 0)
