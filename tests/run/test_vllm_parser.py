"""`--parser vllm:NAME` (wtb_local/formats/parsers/vllm_native.py): the installed vLLM's own tool parser reads a
run's completions. A replay of the embedded sample and `parsers compare RUN --parsers hermes,vllm:hermes`
without a server, vLLM's version recorded (manifest, hashed config, versions) and set-up errors in one line.
Imports vLLM, starts no engine (marker `vllm`); the tokenizer is the tiny Qwen2.5-template one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.run.conftest import RESULT_NAME, invoke, read_jsonl

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm")

from wtb_local.contract.vllm_release import installed_version
from wtb_local.formats.parsers import get_parser, parse_completion
from wtb_local.formats.parsers.vllm_native import VllmParserSetupError

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "w", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


@pytest.fixture(scope="module")
def oracle_run(qwen_tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sessions 3 and 6 of the embedded sample, the gold replies written in the Hermes format."""
    out = tmp_path_factory.mktemp("vllm-parser") / "oracle"
    result = invoke(["--backend", "oracle", "--model", str(qwen_tiny_dir), "--model-name", "tiny", "--dataset",
                     "sample", "--sessions", "3,6", "--out", str(out), "--progress", "none"])
    assert result.exit_code == 0, result.output
    return out


def test_a_replay_through_vllms_hermes_records_its_version(oracle_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "replayed"
    result = invoke(["--backend", "replay", "--replay", str(oracle_run), "--parser", "vllm:hermes", "--dataset",
                     "sample", "--out", str(out), "--progress", "none"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert (manifest["parser"], manifest["config"]["parser"]) == ("vllm:hermes", "vllm:hermes")
    assert manifest["config"]["parser_version"] == installed_version()
    assert manifest["versions"]["parser"] == {"name": "vllm:hermes", "implementation": "vllm",
                                              "version": installed_version()}
    recorded = json.loads((oracle_run / "manifest.json").read_text(encoding="utf-8"))
    assert "parser_version" not in recorded["config"]  # our own parser: the hash of earlier runs is unchanged
    assert recorded["versions"]["parser"]["implementation"] == "wtb_local"
    # every gold reply read by vLLM's parser as by ours: the same verdicts
    ours = read_jsonl(oracle_run / "result" / "tiny" / RESULT_NAME)
    theirs = read_jsonl(out / "result" / "tiny" / RESULT_NAME)
    assert [row["id"] for row in ours] == [row["id"] for row in theirs]
    metric = json.loads(next((out / "score").rglob("*metric.json")).read_text(encoding="utf-8"))
    assert metric == json.loads(next((oracle_run / "score").rglob("*metric.json")).read_text(encoding="utf-8"))


def test_parsers_compare_with_vllms_parser(oracle_run: Path) -> None:
    from wtb_local.analysis.commands.parser_comparison import compare_parsers
    from wtb_local.run.job import replay_run

    report = compare_parsers(oracle_run, ["hermes", "vllm:hermes"], replay=replay_run)
    hermes, vllm = report["completions"]["hermes"], report["completions"]["vllm:hermes"]
    assert hermes["calls"] > 0 and vllm["calls"] == hermes["calls"]
    assert (vllm["disagreements"], vllm["parse_failures"]) == (0, 0)
    assert report["tasks"]["vllm:hermes"]["verdicts_differing"] == 0
    assert report["tasks"]["vllm:hermes"]["correct"] == report["tasks"]["hermes"]["correct"] > 0


def test_set_up_errors_are_one_line(qwen_tiny_dir: Path, oracle_run: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(qwen_tiny_dir)
    with pytest.raises(VllmParserSetupError, match=r"^vLLM [\d.]+\S* has no tool parser 'nope'; its parsers: "):
        get_parser("vllm:nope", tokenizer=tokenizer)
    with pytest.raises(VllmParserSetupError, match=r"needs the run's tokenizer"):
        get_parser("vllm:hermes")
    # deepseek_v3 looks its call tokens up in the vocabulary: the tiny Qwen tokenizer has none of them
    with pytest.raises(VllmParserSetupError) as refused:
        get_parser("vllm:deepseek_v3", tokenizer=tokenizer)
    assert str(refused.value).startswith(f"vLLM {installed_version()}'s parser 'deepseek_v3' refuses the run's "
                                         f"tokenizer ({qwen_tiny_dir}): RuntimeError: DeepSeek-V3 Tool parser could "
                                         "not locate tool call start/end tokens")
    assert "\n" not in str(refused.value)
    result = invoke(["--backend", "replay", "--replay", str(oracle_run), "--parser", "vllm:deepseek_v3",
                     "--dataset", "sample", "--out", str(tmp_path / "dsv3"), "--progress", "none"])
    assert result.exit_code != 0
    errors = [line for line in result.stderr.strip().splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and errors[0].startswith("Error: --parser vllm:deepseek_v3: vLLM "), errors


def test_a_vllm_parser_that_raises_is_an_error_of_the_parser(qwen_tiny_dir: Path) -> None:
    from transformers import AutoTokenizer

    # vLLM 0.32's `openai` parser is a stub (the serving layer reads harmony tokens): it raises on any text
    parser = get_parser("vllm:openai", tokenizer=AutoTokenizer.from_pretrained(qwen_tiny_dir))
    result = parse_completion(parser, "hello", tools=TOOLS, finish_reason="stop")
    assert result.tool_calls == [] and len(result.errors) == 1
    assert result.errors[0].startswith(f"parser vllm:openai crashed: VllmParserCrash: vLLM {installed_version()} "
                                       "parser 'openai' raised NotImplementedError")


def test_calls_content_and_reasoning_map_like_ours(qwen_tiny_dir: Path) -> None:
    from transformers import AutoTokenizer

    parser = get_parser("vllm:hermes", tokenizer=AutoTokenizer.from_pretrained(qwen_tiny_dir))
    text = ('<think>\nplan\n</think>\n\nOn it.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "北京"}}'
            "\n</tool_call><|im_end|>")
    result = parse_completion(parser, text, tools=TOOLS, finish_reason="stop")
    assert (result.reasoning, result.content, result.errors) == ("plan", "On it.", [])
    assert [(c.id, c.name, json.loads(c.arguments)) for c in result.tool_calls] == [
        (None, "get_weather", {"city": "北京"})]
    # a tool given as a bare function description is wrapped in the chat API's shape
    bare = parse_completion(parser, text, tools=[TOOLS[0]["function"]], finish_reason="stop")
    assert bare.tool_calls == result.tool_calls


def test_the_in_process_engine_is_set_up_with_vllms_parser(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    """`run --backend vllm --parser vllm:hermes` up to the engine start: the start-up template probe reads the
    template's calls with our parser of that name, the run's parser is vLLM's, and its version is recorded."""
    from wtb_local.run.setup.options import RunOptions
    from wtb_local.run.setup.prepare import prepare

    prepared = prepare(RunOptions(backend="vllm", model=str(qwen_tiny_dir), parser="vllm:hermes", dataset="sample",
                                  sessions=("3",), out=str(tmp_path / "run"), progress="none"))
    assert (prepared.run.parser, prepared.run.parser_version) == ("vllm:hermes", installed_version())
    assert prepared.parser.name == "vllm:hermes" and prepared.parser.implementation == "vllm"
    assert prepared.backend_class.engine() == {"name": "vllm", "version": installed_version(),
                                               "constrained_decoding": "off"}
