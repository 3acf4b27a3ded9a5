"""The factor table (wtb_local/analysis/explain/factors.py) is the one docs/explain.md shows, and reads a replay's
generation factors from the run it replays."""

from __future__ import annotations

import re
from pathlib import Path

from wtb_local.analysis.explain.factors import FACTORS, RunRecords, differing, read_factors

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_table_is_the_code_table() -> None:
    text = (ROOT / "docs" / "explain.md").read_text(encoding="utf-8")
    section = text[text.index("| factor | stage | read from the manifest |"):]
    rows = re.findall(r"^\| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", section.split("\n\n", 1)[0], flags=re.MULTILINE)
    assert rows[0] == ("factor", "stage", "read from the manifest")
    assert rows[1:] == [(f.name, f.stage, f.source) for f in FACTORS]


def test_generation_factors_come_from_the_generating_run() -> None:
    recorded = {"config": {"model": "m", "backend": "vllm", "sampling": {"seed": 3, "max_new_tokens": 64},
                           "dtype": "bfloat16", "parser": "hermes", "template_sha256": "ab" * 32,
                           "dataset_sha256": "cd" * 32},
                "template": {"source": "tokenizer"}, "backend": {"vllm_version": "0.9", "device": "cuda"},
                "thinking": {"effective": True}, "protocol": {"name": "release", "checker": "strict"},
                "sampling_used": {"source": "generation_config.json", "do_sample": True, "temperature": 0.6},
                "wtb_local": {"version": "0.1.0", "git_commit": "0123456789abcdef", "git_dirty": True}}
    replay = {"config": {"model": "m", "backend": "replay", "parser": "pythonic", "sampling": {"seed": 0},
                         "dataset_sha256": "cd" * 32},
              "sampling_used": {"source": "none: the replay backend does not sample"},
              "wtb_local": {"version": "0.1.0", "git_commit": "0123456789abcdef", "git_dirty": True}}
    own = read_factors(RunRecords(manifest=recorded, generation=recorded, checker="strict"))
    assert own == {
        "dataset": "cdcdcdcdcdcd", "template": "tokenizer abababababab", "template kwargs": "none",
        "tokenizer": "none", "thinking": "on", "protocol": "release", "model": "m", "revision": "none",
        "dtype / quantization": "bfloat16", "engine": "vllm", "engine version": "vllm 0.9, device cuda",
        "sampling": "source generation_config.json, do_sample true, temperature 0.6", "max new tokens": "64",
        "seed": "3", "context window": "none", "parser": "hermes", "checker": "strict",
        "evaluator": "0.1.0 (0123456789ab, uncommitted changes)", "constrained decoding": "none",
        "parser implementation": "unknown"}
    replayed = read_factors(RunRecords(manifest=replay, generation=recorded, checker="strict"))
    assert differing([own, replayed]) == ["parser"]
    alone = read_factors(RunRecords(manifest=replay, generation=replay, checker="lenient"))
    assert differing([own, alone]) == ["template", "thinking", "dtype / quantization", "engine", "engine version",
                                       "sampling", "max new tokens", "seed", "parser", "checker"]
    assert differing([own, alone], "completion") == ["dtype / quantization", "engine", "engine version",
                                                     "sampling", "max new tokens", "seed"]
    # the versions a score depends on: vLLM's own parser of the same name, on a constrained engine
    vllm_read = {**recorded, "config": {**recorded["config"], "parser": "vllm:hermes", "parser_version": "0.34.0"},
                 "versions": {"engine": {"name": "vllm", "version": "0.34.0", "constrained_decoding": "on"},
                              "parser": {"name": "vllm:hermes", "implementation": "vllm", "version": "0.34.0"}}}
    ours = {**recorded, "versions": {"engine": {"name": "vllm", "version": "0.34.0", "constrained_decoding": "off"},
                                     "parser": {"name": "hermes", "implementation": "wtb_local", "version": "0.1.0"}}}
    factors = [read_factors(RunRecords(manifest=m, generation=m, checker="strict")) for m in (ours, vllm_read)]
    assert [f["parser implementation"] for f in factors] == ["wtb_local 0.1.0", "vllm 0.34.0"]
    assert differing(factors) == ["constrained decoding", "parser", "parser implementation"]


def test_the_dtype_is_shown_as_recorded_not_as_asked() -> None:
    """`--dtype auto` resolved to float32: the manifest records both; explain shows what the weights ran in."""
    auto_run = {"config": {"dtype": "auto"}, "settings": {"resolved_dtype": "float32"}}
    older = {"config": {"dtype": "bfloat16", "quantization": "fp8"}}  # written before resolved_dtype existed
    dtype = next(f for f in FACTORS if f.name == "dtype / quantization")
    assert dtype.read(RunRecords(auto_run, auto_run, "strict")) == "float32"
    assert dtype.read(RunRecords(older, older, "strict")) == "bfloat16, fp8"
