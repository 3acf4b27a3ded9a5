"""`python -m wtb_local plan ROSTER` through the real CLI, offline: the paper roster's whole plan (exact
text), broken rosters (one-line errors naming file, entry and field; exit 1), and a cached config.json
taking over from the roster's parameter count and shape."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.roster.conftest import PAPER_ROSTER, ROOT, cache_config, wtb

FIXTURE = ROOT / "tests" / "fixtures" / "roster" / "paper_plan.txt"
QWEN25_7B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
             "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
             "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768,
             "tie_word_embeddings": False, "torch_dtype": "bfloat16"}




def _statuses(text: str) -> dict[str, str]:
    lines = [line for line in text.splitlines()[1:] if line and not line.startswith(" ") and "entries:" not in line]
    return {line.split()[0]: line.split()[-1] for line in lines}


def test_the_paper_roster_plans_offline_exactly(tmp_path: Path) -> None:
    proc = wtb("plan", str(PAPER_ROSTER), hf_home=tmp_path / "hf")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == FIXTURE.read_text(encoding="utf-8")
    statuses = _statuses(proc.stdout)
    from wtb_local.analysis.roster.plan import open_weight_rows

    assert sorted(statuses) == sorted(open_weight_rows()) and len(statuses) == 41
    assert set(statuses.values()) == {"ok"}
    # the work of each entry, with no recorded GPU rate to turn it into a time (docs/runner-speed.md §8)
    assert proc.stderr.splitlines() == [(
        "estimate per entry (the release, at most 512 new tok a step): 1,024 task(s), about 1,184 steps and 130,880 "
        "generated tok; no recorded rate for vllm on the roster's GPUs: the progress line's eta, from this run's "
        "first tasks, is the estimate")]
    assert proc.stdout.splitlines()[-1] == ("41 entries: 41 ok, 0 warning, 0 error; 41 of the paper's 41 "
                                           "open-weight rows have an entry")
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()}
    # decisions made by the run's own functions: parse rule, native parser, family rule, thinking switch
    assert "paper:native:deepseek_v3" in rows["DeepSeek-V3"] and "generic (inferred)" in rows["DeepSeek-V3"]
    assert "gpu8x2 (2x8 H100 80GB, tp8 pp2)" in rows["Kimi-K2"] and "955.5 + 68.6 / 1146.2" in rows["Kimi-K2"]
    assert "enable_thinking=true" in rows["Qwen3-8B-Thinking"] and "enable_thinking=false" in rows["Qwen3-8B"]
    assert "paper:llama" in rows["Llama-3.3-8B-Instruct"] and "llama (documented)" in rows["Llama-3.3-8B-Instruct"]
    assert "thinking=false" in rows["DeepSeek-V3.1"]
    assert "paper:pythonic" in rows["ToolACE2-8B"] and "toolace (documented)" in rows["ToolACE2-8B"]


HEADER = '''[resources.one]
gpus_per_node = 1
gpu = "H100 80GB"
gpu_memory_gib = 79.6

'''
ENTRY = '''[[entry]]
row = "Qwen2.5-7B-Instruct"
model = "Qwen/Qwen2.5-7B-Instruct"
resources = "one"
params_b = 7.62
config = { layers = 28, attention_heads = 28, kv_heads = 4, head_dim = 128, max_position_embeddings = 32768 }
max_model_len = 32768
'''


@pytest.mark.parametrize(("text", "message"), [
    (HEADER + ENTRY.replace('model = "Qwen/Qwen2.5-7B-Instruct"\n', ""),
     "{path}: entry 'Qwen2.5-7B-Instruct': field 'model': missing"),
    (HEADER + ENTRY.replace("params_b", "param_b"),
     ("{path}: entry 'Qwen2.5-7B-Instruct': unknown field 'param_b' (known: batch_sequence_tokens, "
     "batch_sequences, chat_template, checkpoint_dtype, config, dtype, gpu_memory_utilization, max_model_len, "
     "model, paper_family, params_b, parser, pipeline_parallel_size, protocol, quantization, resources, row, "
     "tensor_parallel_size, thinking, why)")),
    (HEADER + ENTRY.replace('resources = "one"', 'resources = "two"'),
     "{path}: entry 'Qwen2.5-7B-Instruct': field 'resources': unknown class 'two' (known: one)"),
    (HEADER + ENTRY.replace("params_b = 7.62", 'params_b = "7.62"'),
     "{path}: entry 'Qwen2.5-7B-Instruct': field 'params_b': expected int, got '7.62'"),
    (HEADER + ENTRY.replace("kv_heads = 4", "kv_heads = 0"),
     "{path}: entry 'Qwen2.5-7B-Instruct': field 'config.kv_heads': expected a positive integer, got 0"),
    (HEADER + ENTRY + "\n" + ENTRY,
     "{path}: entry 'Qwen2.5-7B-Instruct': field 'row': also entry #1"),
    (HEADER + ENTRY.replace('row = "Qwen2.5-7B-Instruct"\n', ""), "{path}: entry #1: field 'row': missing"),
    (HEADER.replace("gpu_memory_gib = 79.6\n", "") + ENTRY,
     "{path}: resources.one: field 'gpu_memory_gib': missing"),
    (HEADER + ENTRY.replace("max_model_len = 32768", "max_model_len = 32768\nprotocol = \"harness\""),
     "{path}: entry 'Qwen2.5-7B-Instruct': field 'protocol': expected one of paper, release, got 'harness'"),
])
def test_a_broken_roster_is_one_line_naming_file_entry_and_field(tmp_path: Path, text: str, message: str) -> None:
    roster = tmp_path / "broken.toml"
    roster.write_text(text)
    proc = wtb("plan", str(roster), hf_home=tmp_path / "hf")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == f"Error: {message.format(path=roster)}\n"


def test_invalid_toml_names_the_file_and_line(tmp_path: Path) -> None:
    roster = tmp_path / "broken.toml"
    roster.write_text(HEADER + ENTRY.replace('resources = "one"', "resources = one"))
    proc = wtb("plan", str(roster), hf_home=tmp_path / "hf")
    assert proc.returncode == 1
    assert proc.stderr == f"Error: {roster}: not valid TOML: Invalid value (at line 9, column 13)\n"


@pytest.mark.parametrize(("change", "problem"), [
    ("tensor_parallel_size = 2",
     "    error: tensor x pipeline parallel = 2 x 1 = 2 GPUs, but resources one give 1"),
    ("max_model_len = 65536", "    error: max_model_len 65536 exceeds the model's maximum 32768"),
    ("params_b = 76.2", ("    error: does not fit: 141.9 GiB weights (bfloat16) + 1.8 GiB KV for one 32768-token "
                        "sequence > 79.6 GiB usable on 1 x H100 80GB")),
    ('thinking = true\nparams_b = 7.62', ("    error: --thinking: the chat template of Qwen/Qwen2.5-7B-Instruct has no "
                                       "thinking switch (use --template-kwarg KEY=VALUE if it reads another variable)")),
    ('chat_template = "nope"\nparams_b = 7.62', ("    error: --chat-template 'nope': neither a shipped override (known: "
     "apertus, deepseek_r1_distill, deepseek_v3, deepseek_v31, deepseek_v32, deepseek_v4, deepseek_v41, "
     "gemma3_pythonic, gpt_oss, granite3_3, hammer2_1, inkling, kimi_k3, lfm2, lfm2_5, llama3_json, llama4_pythonic, "
     "phi4_mini, pythonic_llama3) nor a file")),
    ("batch_sequences = 512\nparams_b = 7.62", ("    warning: KV cache for the planned batch (512 x 4096 tokens, 112.0 "
     "GiB) exceeds the 65.4 GiB left after the weights: vLLM batches fewer sequences")),
])
def test_an_entry_that_cannot_run_as_written_is_an_error(tmp_path: Path, change: str, problem: str) -> None:
    key = change.split("\n")[-1].split(" =")[0]
    entry = "\n".join(line for line in ENTRY.splitlines() if not line.startswith(f"{key} ")) + "\n" + change + "\n"
    roster = tmp_path / "roster.toml"
    roster.write_text(HEADER + entry)
    proc = wtb("plan", str(roster), hf_home=tmp_path / "hf")
    lines = proc.stdout.splitlines()
    assert problem in lines, proc.stdout
    if problem.startswith("    error"):
        assert proc.returncode == 1
        assert proc.stderr == "error: 1 entry cannot run as written: Qwen2.5-7B-Instruct\n"
        assert lines[1].endswith(" error")
    else:
        assert proc.returncode == 0 and lines[1].endswith(" warning")


# Entries without gpu_memory_utilization take the default of the vLLM release planned for (conftest: 0.34.0).
SHARE_LINE = ("usable memory: gpu_memory_utilization as given ({given} of {entries} entries), else 1: the default "
              "of vLLM 0.34.0 on cuda (its extensible KV cache) (set WTB_VLLM_VERSION to plan for another vLLM)")

NOT_A_PAPER_ROW = ENTRY.replace("Qwen2.5-7B-Instruct", "Qwen3.6-27B") + 'protocol = "release"\n'  # model too


@pytest.mark.parametrize(("top", "message", "summary"), [
    # the default: the roster reproduces the paper, so a row the paper lacks is most likely misspelt
    ("", ("warning: row 'Qwen3.6-27B' is not a row of the paper's Table 6: its run has no paper row to be "
          "compared with"),
     ["2 entries: 1 ok, 1 warning, 0 error; 1 of the paper's 41 open-weight rows have an entry"]),
    ('compare_with = "paper"\n', ("warning: row 'Qwen3.6-27B' is not a row of the paper's Table 6: its run has no "
                                  "paper row to be compared with"),
     ["2 entries: 1 ok, 1 warning, 0 error; 1 of the paper's 41 open-weight rows have an entry"]),
    # a roster of other models: the row says so, and the paper rows it lacks are not listed
    ('compare_with = "none"\n', "note: no paper row",
     ["2 entries: 2 ok, 0 warning, 0 error; 1 without a paper row (compare_with = 'none')"]),
])
def test_a_row_without_a_paper_row_is_never_an_error(tmp_path: Path, top: str, message: str,
                                                     summary: list[str]) -> None:
    roster = tmp_path / "roster.toml"
    roster.write_text(top + HEADER + ENTRY + "\n" + NOT_A_PAPER_ROW)
    proc = wtb("plan", str(roster), hf_home=tmp_path / "hf")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].split()[0] == "Qwen2.5-7B-Instruct" and lines[1].endswith(" ok")
    assert lines[2].split()[0] == "Qwen3.6-27B" and "qwen3_coder" in lines[2]
    assert lines[3:] == [f"    {message}", SHARE_LINE.format(given=0, entries=2), *summary]


def test_compare_with_takes_paper_or_none(tmp_path: Path) -> None:
    roster = tmp_path / "roster.toml"
    roster.write_text('compare_with = "table6"\n' + HEADER + ENTRY)
    proc = wtb("plan", str(roster), hf_home=tmp_path / "hf")
    assert proc.returncode == 1
    assert proc.stderr == f"Error: {roster}: compare_with: expected one of paper, none, got 'table6'\n"
    roster.write_text('compare = "none"\n' + HEADER + ENTRY)
    proc = wtb("plan", str(roster), hf_home=tmp_path / "hf")
    assert proc.stderr == (f"Error: {roster}: unknown top-level key 'compare' (known: compare_with, defaults, "
                           "resources, entry)\n")


def test_a_cached_config_json_overrides_the_roster(tmp_path: Path) -> None:
    hf = tmp_path / "hf"
    roster = tmp_path / "roster.toml"
    # the roster's values are wrong on purpose: 99B parameters, 80 layers
    roster.write_text(HEADER + ENTRY.replace("params_b = 7.62", "params_b = 99.0").replace("layers = 28", "layers = 80"))
    before = wtb("plan", str(roster), hf_home=hf)
    assert before.returncode == 1
    assert "99.00B (roster)" in before.stdout and "184.4 + 40.0 / 79.6" in before.stdout

    cache_config(hf, "Qwen/Qwen2.5-7B-Instruct", QWEN25_7B)
    after = wtb("plan", str(roster), hf_home=hf)
    assert after.returncode == 0, after.stdout
    line = after.stdout.splitlines()[1]
    assert "7.62B (config.json)" in line and "14.2 + 14.0 / 79.6" in line and line.endswith(" ok")

    cache_config(hf, "Qwen/Qwen2.5-7B-Instruct", {**QWEN25_7B, "max_position_embeddings": 4096})
    short = wtb("plan", str(roster), hf_home=hf)
    assert short.returncode == 1
    assert "    error: max_model_len 32768 exceeds the model's maximum 4096" in short.stdout.splitlines()


def test_plan_imports_no_engine(tmp_path: Path) -> None:
    """`plan` and `--submit --dry-run` decide everything without torch, vllm or transformers."""
    code = ("import sys\nfrom wtb_local.cli import cli\n"
            f"cli.main(args=['plan', {str(PAPER_ROSTER)!r}, '--submit', '--dry-run'], standalone_mode=False)\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'vllm', 'transformers'))\n"
            "print('HEAVY', heavy)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1",
                               "PYTHONPATH": str(ROOT)}, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "HEAVY []"


def test_a_cached_template_decides_the_parser_as_at_run_time(tmp_path: Path) -> None:
    """A release-protocol entry whose cached tokenizer template prompts for pythonic calls gets the pythonic
    parser (select_parser reads the template's markers first), where its model id alone says llama3_json."""
    hf = tmp_path / "hf"
    config = cache_config(hf, "meta-llama/Llama-3.2-3B-Instruct", {"model_type": "llama"})
    template = (ROOT / "chat_templates" / "pythonic_llama3.jinja").read_text()
    (config.parent / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    roster = tmp_path / "roster.toml"
    roster.write_text(HEADER + ENTRY.replace("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.2-3B-Instruct")
                      .replace("Qwen2.5-7B-Instruct", "Llama-3.3-3B-Instruct") + 'protocol = "release"\n')
    proc = wtb("plan", str(roster), hf_home=hf)
    line = proc.stdout.splitlines()[1]
    assert "  pythonic  " in line and "shipped (cached tokenizer) (fallback: override:llama3_json)" in line, line
    bare = wtb("plan", str(roster), hf_home=tmp_path / "empty")
    assert "  llama3_json  " in bare.stdout.splitlines()[1]


DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
               "num_hidden_layers": 61, "vocab_size": 129280, "num_attention_heads": 128, "num_key_value_heads": 128,
               "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
               "v_head_dim": 128, "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256,
               "n_shared_experts": 1, "first_k_dense_replace": 3, "max_position_embeddings": 163840,
               "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8", "fmt": "e4m3"}}
QWEN3_30B_A3B = {"hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
                 "head_dim": 128, "vocab_size": 151936, "intermediate_size": 6144, "moe_intermediate_size": 768,
                 "num_experts": 128, "tie_word_embeddings": False}


def test_parameter_counts_of_latent_attention_and_experts() -> None:
    from wtb_local.formats.checkpoint import estimate_parameters

    # published totals: DeepSeek-V3 671B (without its multi-token-prediction layer), Qwen3-30B-A3B 30,532,122,624
    assert estimate_parameters(DEEPSEEK_V3) == 671_026_279_424
    assert abs(estimate_parameters(QWEN3_30B_A3B) - 30_532_122_624) / 30_532_122_624 < 1e-5


def test_a_cached_fp8_config_sets_parameters_bytes_and_latent_kv(tmp_path: Path) -> None:
    hf = tmp_path / "hf"
    cache_config(hf, "deepseek-ai/DeepSeek-V3", DEEPSEEK_V3)
    roster = tmp_path / "roster.toml"
    roster.write_text(HEADER.replace("gpus_per_node = 1", "gpus_per_node = 8\nnodes = 2") + '''[[entry]]
row = "DeepSeek-V3"
model = "deepseek-ai/DeepSeek-V3"
resources = "one"
tensor_parallel_size = 8
pipeline_parallel_size = 2
params_b = 1.0
max_model_len = 32768
''')
    proc = wtb("plan", str(roster), hf_home=hf)
    line = proc.stdout.splitlines()[1]
    # 671.03B x 1 byte (FP8 from quantization_config, not the 2 bytes of torch_dtype); KV: 61 layers x
    # (512 + 64) x 2 bytes, on each of the 8 tensor-parallel ranks, x 64 x 4096 tokens = 137.2 GiB
    assert "671.03B (config.json)" in line and "624.9 + 137.2 / 1273.6" in line and line.endswith(" ok"), line


def test_a_cached_safetensors_index_gives_the_weights_bytes(tmp_path: Path) -> None:
    """With the checkpoint's safetensors index on disk its byte count is the weights' (checkpoint.weight_bytes)."""
    hf = tmp_path / "hf"
    config = cache_config(hf, "Qwen/Qwen2.5-7B-Instruct", QWEN25_7B)
    index = {"metadata": {"total_size": 16_106_127_360}, "weight_map": {}}
    (config.parent / "model.safetensors.index.json").write_text(json.dumps(index))
    roster = tmp_path / "roster.toml"
    roster.write_text(HEADER + ENTRY)
    line = wtb("plan", str(roster), hf_home=hf).stdout.splitlines()[1]
    assert "7.62B (config.json; weights: safetensors index)" in line and "15.0 + 14.0 / 79.6" in line, line
