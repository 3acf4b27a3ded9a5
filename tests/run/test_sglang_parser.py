"""`--parser sglang:NAME` (wtb_local/formats/parsers/sglang_native.py): SGLang's own function-call parser reads a
run's completions through the bridge to SGLang's venv. A replay of an oracle run, `parsers compare` and
`explain` with it, SGLang's version recorded, and errors in one line. Marker `sglang` (WTB_SGLANG_PYTHON, or
SGLang importable here; without it the module skips, under CI=true it fails); no engine, no vLLM."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.run.conftest import RESULT_NAME, invoke, read_jsonl
from wtb_local.formats.parsers import get_parser, parse_completion
from wtb_local.formats.parsers.sglang_native import PYTHON_VAR, SglangParserSetupError, python

pytestmark = pytest.mark.sglang

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "w", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


@pytest.fixture(scope="module", autouse=True)
def sglang_venv() -> None:
    if python() is None:
        why = f"SGLang's venv is not known: set {PYTHON_VAR} to its Python (.ci/run builds .venv-sglang)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Sessions 3 and 6 of the embedded sample, Qwen3's gold Hermes calls, and its replay through SGLang's qwen25."""
    root = tmp_path_factory.mktemp("sglang-parser")
    done = invoke(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--sessions", "3,6",
                   "--out", str(root / "oracle"), "--progress", "none"])
    assert done.exit_code == 0, done.output
    done = invoke(["--backend", "replay", "--replay", str(root / "oracle"), "--parser", "sglang:qwen25", "--dataset",
                   "sample", "--out", str(root / "sglang"), "--progress", "none"])
    assert done.exit_code == 0, done.output
    return root / "oracle", root / "sglang"


def test_a_replay_through_sglangs_qwen25_records_its_version(runs: tuple[Path, Path]) -> None:
    oracle, replayed = runs
    manifest = json.loads((replayed / "manifest.json").read_text(encoding="utf-8"))
    assert (manifest["parser"], manifest["config"]["parser"]) == ("sglang:qwen25", "sglang:qwen25")
    assert manifest["config"]["parser_version"] == "0.5.23"
    assert manifest["versions"]["parser"] == {"name": "sglang:qwen25", "implementation": "sglang",
                                              "version": "0.5.23"}
    model = "Qwen_Qwen3-8B"
    ours, theirs = (read_jsonl(run / "result" / model / RESULT_NAME) for run in (oracle, replayed))
    assert [row["id"] for row in ours] == [row["id"] for row in theirs]
    metric = json.loads(next((replayed / "score").rglob("*metric.json")).read_text(encoding="utf-8"))
    assert metric == json.loads(next((oracle / "score").rglob("*metric.json")).read_text(encoding="utf-8"))


def test_parsers_compare_and_explain_with_sglangs_parser(runs: tuple[Path, Path]) -> None:
    from wtb_local.analysis.commands.parser_comparison import compare_parsers
    from wtb_local.analysis.explain.build import explain_runs
    from wtb_local.analysis.explain.runs import runs_to_explain
    from wtb_local.run.job import replay_run

    oracle, replayed = runs
    report = compare_parsers(oracle, ["hermes", "sglang:qwen25"], replay=replay_run)
    hermes, sglang = report["completions"]["hermes"], report["completions"]["sglang:qwen25"]
    assert hermes["calls"] > 0 and sglang["calls"] == hermes["calls"]
    assert (sglang["disagreements"], sglang["parse_failures"]) == (0, 0)
    assert report["tasks"]["sglang:qwen25"]["verdicts_differing"] == 0
    data = explain_runs(runs_to_explain([str(oracle), str(replayed)]), replay_run)
    factors = {f["name"]: f for f in data["factors"]}
    assert factors["parser"]["differ"] and factors["parser implementation"]["differ"]
    assert "sglang 0.5.23" in json.dumps(factors["parser implementation"], ensure_ascii=False)


def test_calls_content_reasoning_and_errors() -> None:
    parser = get_parser("sglang:qwen25")
    text = ('<think>\nplan\n</think>\n\nOn it.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "北京"}}'
            "\n</tool_call><|im_end|>")
    result = parse_completion(parser, text, tools=TOOLS, finish_reason="stop")
    assert (result.reasoning, result.content, result.errors) == ("plan", "On it.", [])
    assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == [("get_weather", {"city": "北京"})]
    # SGLang reads no call without declared tools
    assert parse_completion(parser, text, finish_reason="stop").tool_calls == []
    with pytest.raises(SglangParserSetupError, match=r"^SGLang 0\.5\.23 has no function-call parser 'nope'; its "
                                                     r"parsers: apertus2509, "):
        get_parser("sglang:nope")


def test_a_missing_sglang_venv_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: tuple[Path, Path]
                                           ) -> None:
    monkeypatch.setenv(PYTHON_VAR, str(tmp_path / "no-python"))
    done = invoke(["--backend", "replay", "--replay", str(runs[0]), "--parser", "sglang:hermes", "--dataset",
                   "sample", "--out", str(tmp_path / "out"), "--progress", "none"])
    assert done.exit_code != 0
    errors = [line for line in done.stderr.strip().splitlines() if line.startswith("Error")]
    assert errors == [(f"Error: --parser sglang:hermes: {PYTHON_VAR}={tmp_path / 'no-python'} cannot be started: "
                      f"[Errno 2] No such file or directory: '{tmp_path / 'no-python'}'")], errors
