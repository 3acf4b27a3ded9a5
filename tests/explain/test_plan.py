"""`explain --plan MODEL` (docs/explain.md, "Planning the runs"): the runs that measure the usual factors,
decided offline by the functions a run uses; run for real, on a tiny model, by
tests/explain/test_real_model_script.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.run.conftest import chat_template
from wtb_local.analysis.explain.plan import ALTERNATIVE_PARSERS, make_plan
from wtb_local.engines import engine_backends
from wtb_local.formats.parsers import parser_names

ROOT = Path(__file__).resolve().parents[2]


def _plan(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("WTB_", "HF_"))},
           "PYTHONPATH": str(ROOT), "HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "wtb_local", "explain", "--plan", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300, check=False)


def test_the_plan_of_a_hub_model_not_on_disk(tmp_path: Path) -> None:
    done = _plan("Qwen/Qwen3-8B", home=tmp_path / "hf")
    assert done.returncode == 0, done.stderr
    d = "runs/explain-qwen3-8b"
    assert done.stdout.splitlines() == [
        "#!/usr/bin/env bash",
        "# explain --plan Qwen/Qwen3-8B: the runs that measure the usual factors (docs/explain.md)",
        "set -e",
        ("# note: Qwen/Qwen3-8B's generation_config.json is not on disk: if it decodes greedily, `run --repeats` "
         "refuses; add --temperature T to every run (--run-option)"),
        "# note: no template override serves Qwen/Qwen3-8B",
        "# baseline, 3 seeds: engine vllm, parser hermes, the defaults",
        f"python -m wtb_local run --model Qwen/Qwen3-8B --backend vllm --repeats 3 --out {d}/base",
        ("# parser: qwen3_coder: the Qwen3-Coder/Qwen3.5 XML reader, which also reads Hermes-style JSON blocks: a "
         "deployment configured for the newer Qwen format; a replay, no generation"),
        (f"python -m wtb_local run --backend replay --replay {d}/base/repeats/0 --parser qwen3_coder "
         f"--out {d}/parser-qwen3_coder"),
        ("# parser: llama3_json: a bare JSON-object reader: takes the calls of a <tool_call> block and keeps the "
         "markup as text (docs/parser-policies.md §2); a replay, no generation"),
        (f"python -m wtb_local run --backend replay --replay {d}/base/repeats/0 --parser llama3_json "
         f"--out {d}/parser-llama3_json"),
        "# engine: the transformers engine, everything else the same",
        f"python -m wtb_local run --model Qwen/Qwen3-8B --backend transformers --out {d}/engine-transformers",
        "# protocol: the paper harness's prompts, lengths, sampling, parse rules and checker",
        f"python -m wtb_local run --model Qwen/Qwen3-8B --backend vllm --protocol paper --out {d}/protocol-paper",
        "# why the numbers differ",
        (f"python -m wtb_local explain {d}/base {d}/parser-qwen3_coder {d}/parser-llama3_json "
         f"{d}/engine-transformers {d}/protocol-paper --out {d}/explain")]


def test_generated_parsers_add_a_run_with_each_alternative_parser(tmp_path: Path) -> None:
    done = _plan("Qwen/Qwen3-8B", "--runs-dir", "r", "--generated-parsers", home=tmp_path / "hf")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("python -m wtb_local run --backend replay --replay r/base/repeats/0 --parser llama3_json "
                     "--out r/parser-llama3_json")
    assert lines[at + 1:at + 5] == [
        ("# parser, generated: qwen3_coder with generation: the steps the replay could not judge (where "
         "qwen3_coder reads a call hermes did not, the conversation goes on to steps the baseline never generated)"),
        ("python -m wtb_local run --model Qwen/Qwen3-8B --backend vllm --parser qwen3_coder "
         "--out r/parser-qwen3_coder-generated"),
        ("# parser, generated: llama3_json with generation: the steps the replay could not judge (where "
         "llama3_json reads a call hermes did not, the conversation goes on to steps the baseline never generated)"),
        ("python -m wtb_local run --model Qwen/Qwen3-8B --backend vllm --parser llama3_json "
         "--out r/parser-llama3_json-generated")]
    assert lines[-1] == ("python -m wtb_local explain r/base r/parser-qwen3_coder r/parser-llama3_json "
                         "r/parser-qwen3_coder-generated r/parser-llama3_json-generated r/engine-transformers "
                         "r/protocol-paper --out r/explain")


def test_a_context_window_adds_a_run_with_that_max_model_len(tmp_path: Path) -> None:
    done = _plan("Qwen/Qwen3-8B", "--runs-dir", "r", "--context-window", "2048", "--run-option", "--limit 2",
                 home=tmp_path / "hf")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("python -m wtb_local run --model Qwen/Qwen3-8B --backend transformers --limit 2 --out "
                     "r/engine-transformers")
    assert lines[at + 1:at + 3] == [
        ("# context window: --max-model-len 2048: a deployment with a smaller context window; a prompt that does "
         "not fit ends its step as 'prompt too long', scored as a wrong step"),
        "python -m wtb_local run --model Qwen/Qwen3-8B --backend vllm --limit 2 --max-model-len 2048 --out r/context-2048"]
    assert lines[-1] == ("python -m wtb_local explain r/base r/parser-qwen3_coder r/parser-llama3_json "
                         "r/engine-transformers r/context-2048 r/protocol-paper --out r/explain")
    bad = _plan("Qwen/Qwen3-8B", "--context-window", "0", home=tmp_path / "hf")
    assert bad.returncode == 2 and "Invalid value for '--context-window'" in bad.stderr


def test_a_model_with_a_template_override_plans_a_run_with_it(tmp_path: Path) -> None:
    done = _plan("meta-llama/Llama-3.1-8B-Instruct", "--runs-dir", "r", "--engine", "transformers",
                 home=tmp_path / "hf")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert ("python -m wtb_local run --model meta-llama/Llama-3.1-8B-Instruct --backend transformers "
            "--chat-template llama3_json --out r/template-llama3_json") in lines
    assert ("python -m wtb_local run --model meta-llama/Llama-3.1-8B-Instruct --backend vllm "
            "--out r/engine-vllm") in lines
    assert ("python -m wtb_local run --backend replay --replay r/base/repeats/0 --parser pythonic "
            "--out r/parser-pythonic") in lines
    assert lines[-1] == ("python -m wtb_local explain r/base r/parser-pythonic r/template-llama3_json "
                         "r/engine-vllm r/protocol-paper --out r/explain")


def test_a_greedy_local_model_has_no_seed_runs(tmp_path: Path) -> None:
    from tests.helpers import build_tiny_tokenizer

    model = build_tiny_tokenizer(tmp_path / "greedy model", chat_template("Qwen/Qwen2.5-7B-Instruct"),
                                 special_tokens=["<tool_call>", "</tool_call>"])
    (model / "generation_config.json").write_text(json.dumps({"do_sample": False}), encoding="utf-8")
    plan = make_plan(str(model), engines=engine_backends(), runs_dir="out", run_options=["--dataset sample --limit 2"])
    assert plan.notes == [
        (f"{model} decodes greedily (its generation_config.json, or --temperature 0): every seed gives the same "
         "completions, so there are no seed runs; the noise left is the engine's own"),
        f"no template override serves {model}"]
    assert plan.runs[0].args == ("run", "--model", str(model), "--backend", "vllm", "--dataset", "sample",
                                 "--limit", "2", "--out", "out/base")
    assert plan.runs[1].args[:4] == ("run", "--backend", "replay", "--replay") and plan.runs[1].args[4] == "out/base"
    sampled = make_plan(str(model), engines=engine_backends(), runs_dir="out", run_options=["--temperature 0.7"])
    assert sampled.notes == [f"no template override serves {model}"]
    assert sampled.runs[0].args[5:7] == ("--repeats", "3")
    # a model path with a space is quoted in the script
    from wtb_local.analysis.explain.plan import plan_script

    assert f"--model '{model}' --backend vllm" in plan_script(plan)


def test_alternative_parsers_are_registered_and_the_engine_is_checked(tmp_path: Path) -> None:
    known = set(parser_names())
    assert all(name in known and all(alt in known and alt != name for alt, _ in alternatives)
               for name, alternatives in ALTERNATIVE_PARSERS.items())
    bad = _plan("Qwen/Qwen3-8B", "--engine", "oracle", home=tmp_path / "hf")
    assert bad.returncode == 1
    assert bad.stderr.strip() == "Error: --engine oracle: choose an in-process engine backend (vllm, transformers)"
