"""A recorded real-model run (the trained Qwen2.5-Coder-0.5B-Instruct on vLLM's CPU engine, sessions 3 and 6
of the embedded sample, hermes; tests/fixtures/runner/real_model_vllm) replayed through the installed vLLM's
own hermes parser and through ours: every task's verdict is equal (docs/parsers-and-templates.md, "vLLM's own
parsers"). vLLM's parser is built with the real model's tokenizer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.real_model, pytest.mark.vllm]
pytest.importorskip("vllm")

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "runner" / "real_model_vllm"


def test_vllms_hermes_and_ours_give_the_same_verdicts(real_model_dir: Path, tmp_path: Path) -> None:
    from wtb_local.analysis.commands.parser_comparison import compare_parsers
    from wtb_local.run.job import replay_run

    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["backend"] == "vllm" and manifest["parser"] == "hermes"
    manifest["config"]["model"] = str(real_model_dir)  # the recording machine's cache path, here this one's
    (run / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")

    report = compare_parsers(run, ["hermes", "vllm:hermes"], replay=replay_run, dataset="sample")
    ours, theirs = report["tasks"]["hermes"], report["tasks"]["vllm:hermes"]
    assert (ours["tasks"], ours["not_comparable"], theirs["not_comparable"]) == (8, 0, 0)
    assert theirs["verdicts_differing"] == 0 and theirs["correct"] == ours["correct"]
    # the model writes its calls as fenced or bare JSON, never <tool_call> blocks: neither parser reads a call
    completions = report["completions"]
    assert [completions[name]["calls"] for name in ("hermes", "vllm:hermes")] == [0, 0]
    assert completions["vllm:hermes"]["disagreements"] == 0
    assert completions["vllm:hermes"]["format_deviations"] == completions["hermes"]["format_deviations"] != {}
