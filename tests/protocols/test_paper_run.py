"""`--protocol paper` end to end: oracle, scripted and tiny-model backends; the manifest's `protocol` key;
resume refusing a protocol change; `rescore` equal to a fresh scoring under the same checker; `report`
showing one run under both checkers (docs/paper-protocol.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.tables import printed_label
from tests.run.conftest import VECTORS, chat_template, invoke, read_jsonl, scripted_args

REPO = Path(__file__).resolve().parents[2]
QWEN = "Qwen/Qwen2.5-7B-Instruct"
QWEN_DIR = "Qwen_Qwen2.5-7B-Instruct"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The real command in a subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], capture_output=True, text=True,
                          cwd=REPO, env=full_env, timeout=300, check=False)


def _oracle(out: Path, model: str = QWEN, *extra: str) -> list[str]:
    return ["--model", model, "--backend", "oracle", "--dataset", "sample", "--out", str(out), "--progress", "none",
            *extra]


def _labels(path: Path) -> list[list[str]]:
    return [[task["label"] for task in row["results"]] for row in read_jsonl(path)]


def test_paper_oracle_run_rescore_and_report_in_subprocesses(tmp_path: Path) -> None:
    run_dir = tmp_path / "qwen-paper"
    done = _cli(*_oracle(run_dir, QWEN, "--protocol", "paper"))
    assert done.returncode == 0, done.stderr
    label = printed_label("Qwen_Qwen2.5-7B-Instruct [paper-lenient]", done.stdout)  # as `report` labels it
    assert f"\n{label}  100.00  " in done.stdout
    assert "note: this run: --protocol paper; the paper's open-model rows come from the authors' older harness" in done.stdout

    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    protocol = manifest["protocol"]
    assert (protocol["name"], protocol["checker"], protocol["documented"]) == ("paper", "lenient", True)
    assert protocol["family"]["name"] == "qwen"
    assert protocol["generation"]["max_new_tokens"] == 512 and protocol["generation"]["temperature"] is None
    assert protocol["sources"]["date"] == {
        "english_env_info timestamp + recomputed weekday (inferred: env_info absent)": 8}
    assert (manifest["config"]["protocol"], manifest["parser"]) == ("paper", "paper:qwen")

    result = read_jsonl(run_dir / "result" / QWEN_DIR / "Wild-Tool-Bench_result.jsonl")
    first = result[0]["result"][0]["inference_log"]["step_0"]
    assert first["inference_input"]["messages"][0] == {"role": "system",
                                                       "content": "Current Date:2025-01-08 10:00:00 Wednesday"}
    assert first["inference_output"]["raw"].startswith("<tool_call>\n{")
    assert {label for row in _labels(run_dir / "score" / QWEN_DIR / "Wild-Tool-Bench_score.jsonl") for label in row} == {"correct"}

    strict = _cli("rescore", str(run_dir), "--checker", "strict")
    assert strict.returncode == 0, strict.stderr
    assert f"\n{printed_label('Qwen_Qwen2.5-7B-Instruct [paper-strict]', strict.stdout)}  100.00  " in strict.stdout
    report = _cli("report", str(run_dir), "--table", "7")
    assert report.returncode == 0, report.stderr
    rows = {line.split("  ")[0]: line.split()[-10:] for line in report.stdout.splitlines()[2:]}
    # The harness's AP counts calls and every node of a correct task; the release's counts log steps
    lenient, strict_label = (printed_label(f"Qwen_Qwen2.5-7B-Instruct [paper-{checker}]", report.stdout)
                             for checker in ("lenient", "strict"))
    assert rows[lenient][4:7] == ["100.00", "100.00", "100.00"]
    assert rows[strict_label][4:7] == ["100.00", "75.00", "88.24"]
    assert "paper: Qwen2.5-7B-Instruct" in rows


def test_llama_keyword_rule_turns_its_calls_into_text(tmp_path: Path) -> None:
    """§2.2: Llama's `{"name", "parameters"}` lacks the word `function`, so every call is read as text:
    only the sample's 5 Chat tasks (answered in text) are correct, as in the paper's Llama rows."""
    done = invoke([*_oracle(tmp_path / "llama", "meta-llama/Llama-3.1-8B-Instruct"), "--protocol", "paper"])
    assert done.exit_code == 0, done.output
    metric = json.loads((tmp_path / "llama" / "score" / "meta-llama_Llama-3.1-8B-Instruct" /
                         "Wild-Tool-Bench_metric.json").read_text(encoding="utf-8"))
    assert metric["total_info"]["task"]["correct_count"] == 5
    assert metric["task_type_info"]["Chat"]["accuracy"] == 1.0
    assert metric["task_type_info"]["Single-Tool"]["accuracy"] == 0.0
    # §2.2 + §3.2: a text turn in place of a call is a refusal; on clarify tasks the second text turn is
    # "redundant" — Table 8's Llama pattern (about 80% Refusal, 20% Redundant Call)
    shares = {k: v["count"] for k, v in metric["error_type_info"].items() if v["count"]}
    assert shares == {"reject tool calling": 22, "redundant tool calling": 5}
    manifest = json.loads((tmp_path / "llama" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["protocol"]["generation"]["max_new_tokens"] == 1024


def test_protocol_env_twin_and_resume_refuses_a_protocol_change(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert invoke(_oracle(out, QWEN, "--limit", "1")).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert "protocol" not in manifest["config"]  # release: the hash of earlier runs is unchanged
    assert manifest["protocol"]["name"] == "release"
    changed = invoke(_oracle(out, QWEN, "--limit", "1"), env={"WTB_PROTOCOL": "paper"})
    assert changed.exit_code != 0
    assert 'protocol: null -> "paper"' in changed.output
    fresh = invoke(_oracle(tmp_path / "p", QWEN, "--limit", "1"), env={"WTB_PROTOCOL": "paper"})
    assert fresh.exit_code == 0, fresh.output
    assert json.loads((tmp_path / "p" / "manifest.json").read_text(encoding="utf-8"))["protocol"]["name"] == "paper"


def test_rescore_gives_the_labels_of_a_fresh_scoring_under_the_same_checker(tmp_path: Path) -> None:
    release, paper = tmp_path / "release", tmp_path / "paper"
    assert invoke(_oracle(release)).exit_code == 0
    assert invoke([*_oracle(paper), "--protocol", "paper"]).exit_code == 0
    from click.testing import CliRunner

    from wtb_local.cli import cli

    for run_dir, checker in ((release, "strict"), (paper, "lenient")):
        done = CliRunner().invoke(cli, ["rescore", str(run_dir), "--checker", checker])
        assert done.exit_code == 0, done.output
        ours = run_dir / "score" / QWEN_DIR / "Wild-Tool-Bench_score.jsonl"
        again = run_dir / f"score-{checker}" / "score" / QWEN_DIR / "Wild-Tool-Bench_score.jsonl"
        assert again.read_bytes() == ours.read_bytes()
    lenient = CliRunner().invoke(cli, ["rescore", str(release), "--checker", "lenient"])
    assert lenient.exit_code == 0, lenient.output
    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    assert set(manifest["protocol"]["rescored"]) == {"strict", "lenient"}
    report = CliRunner().invoke(cli, ["report", str(release), "--table", "6", "--no-paper"])
    assert report.exit_code == 0, report.output
    lines = report.output.splitlines()
    # the run (default protocol: a plain label) and its two re-scorings (each with its ± se, 95% CI and n
    # lines), then a line naming every row's protocol
    rows = [line.split("  ")[0] for line in lines[2:] if line and not line.startswith("  ")]
    # a label longer than the cells leave of 120 columns (37 characters here) is shortened, its scoring kept
    assert rows[:3] == ["Qwen_Qwen2.5-7B-Instruct", "Qwen_Qwen2.5-7B-In… [release-lenient]",
                        "Qwen_Qwen2.5-7B-Ins… [release-strict]"]
    table = lines[:next(i for i, line in enumerate(lines) if line.startswith("note: "))]
    assert table[0].startswith("Table 6") and max(len(line) for line in table) == 119
    assert [line for line in lines if line.startswith("protocols: ")] == [("protocols: Qwen_Qwen2.5-7B-Instruct = release, strict checker; "
                        "Qwen_Qwen2.5-7B-Instruct [release-lenient] = release, lenient checker; "
                        "Qwen_Qwen2.5-7B-Instruct [release-strict] = release, strict checker")]


def test_scripted_replies_get_the_same_action_verdicts_under_both_protocols(tmp_path: Path) -> None:
    """§4.1: the step loop (names only) is the same in both protocols; only the conversation differs."""
    assert invoke(scripted_args(tmp_path / "release")).exit_code == 0
    done = invoke(scripted_args(tmp_path / "paper", "--protocol", "paper"))
    assert done.exit_code == 0, done.output

    def actions(run: Path) -> list[list[str]]:
        rows = read_jsonl(run / "result" / "scripted" / "Wild-Tool-Bench_result.jsonl")
        return [[task["action_name_label"] for task in row["result"]] for row in rows]

    assert actions(tmp_path / "paper") == actions(tmp_path / "release")
    assert len(actions(tmp_path / "paper")) == 64
    assert (VECTORS / "dataset.jsonl").exists()


@pytest.mark.slow
@pytest.mark.timeout(600)  # a tiny model generating through transformers: minutes on 2 shared cores
def test_tiny_model_through_transformers_with_the_qwen_rules(tmp_path: Path) -> None:
    """A tiny Qwen2.5-templated model that stops at once: the paper renderer, the family's 512 tokens and
    checkpoint sampling, special tokens skipped before parsing (an empty answer is a step error)."""
    pytest.importorskip("transformers")
    from tests.helpers import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny-model", chat_template(QWEN), special_tokens=["<tool_call>"],
                                 max_position_embeddings=8192, fixed_logits={"<|im_end|>": 50.0})
    done = invoke(["--backend", "transformers", "--model", str(model_dir), "--model-name", "tiny", "--dataset",
                   "sample", "--limit", "1", "--out", str(tmp_path / "run"), "--progress", "none",
                   "--protocol", "paper", "--paper-family", "qwen"])  # the directory name says no family
    assert done.exit_code == 0, done.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["protocol"]["family"]["name"] == "qwen"
    assert manifest["config"]["paper_family"] == "qwen"
    assert manifest["template"]["reason"].startswith("paper protocol: the model's own template")
    rows = read_jsonl(tmp_path / "run" / "result" / "tiny" / "Wild-Tool-Bench_result.jsonl")
    step = rows[0]["result"][0]["inference_log"]["step_0"]["inference_output"]
    assert step["error_reason"] == "tool_calls and content are None or empty"
    assert step["raw"] in ("", "<|im_end|>")


def test_a_paper_run_replays_offline_to_the_same_verdicts(tmp_path: Path) -> None:
    """The replay backend re-parses a paper run's raw completions with the recorded rule (and its
    special tokens) and reaches the same labels."""
    assert invoke([*_oracle(tmp_path / "run", "meta-llama/Llama-3.1-8B-Instruct"), "--protocol", "paper"]).exit_code == 0
    done = invoke(["--backend", "replay", "--replay", str(tmp_path / "run"), "--model",
                   "meta-llama/Llama-3.1-8B-Instruct", "--dataset", "sample", "--out", str(tmp_path / "again"),
                   "--progress", "none", "--protocol", "paper"])
    assert done.exit_code == 0, done.output
    name = "meta-llama_Llama-3.1-8B-Instruct"
    assert _labels(tmp_path / "again" / "score" / name / "Wild-Tool-Bench_score.jsonl") == _labels(
        tmp_path / "run" / "score" / name / "Wild-Tool-Bench_score.jsonl")
    manifest = json.loads((tmp_path / "again" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["parser"] == "paper:llama"


def test_report_splits_the_gap_to_the_paper_into_the_checkers_part_and_the_rest(tmp_path: Path) -> None:
    """One release run scored strict (the run) and lenient (`rescore`): the report's note gives both task
    accuracies, their difference (the checker's part) and the remaining distance to the paper's row."""
    from click.testing import CliRunner

    from wtb_local.cli import cli

    run_dir = tmp_path / "s"
    args = scripted_args(run_dir)
    args[args.index("--model-name") + 1] = QWEN  # the paper has this model's row
    assert invoke(args).exit_code == 0
    assert CliRunner().invoke(cli, ["rescore", str(run_dir), "--checker", "lenient"]).exit_code == 0
    strict = json.loads((run_dir / "score" / QWEN_DIR / "Wild-Tool-Bench_metric.json").read_text(encoding="utf-8"))
    lenient = json.loads((run_dir / "score-lenient" / "score" / QWEN_DIR / "Wild-Tool-Bench_metric.json")
                         .read_text(encoding="utf-8"))
    s, le = (100 * m["total_info"]["task"]["accuracy"] for m in (strict, lenient))
    assert le != s  # the scripted replies include argument errors the two checkers judge differently
    done = CliRunner().invoke(cli, ["report", str(run_dir), "--table", "6"])
    assert done.exit_code == 0, done.output
    assert [line for line in done.output.splitlines() if line.startswith("gap to the paper")] == [(
        f"gap to the paper (Qwen_Qwen2.5-7B-Instruct, --protocol release, task accuracy): release-strict {s:.2f}, "
        f"release-lenient {le:.2f} (checker: {le - s:+.2f}); paper 45.02 (the rest: {45.02 - le:+.2f}, "
        "prompts/generation/sampling/parse rules — run --protocol paper to measure them)")]


@pytest.mark.parametrize(("model", "family", "documented"), [
    ("MadeAgents/Hammer2.1-7b", "hammer", True),
    ("Team-ACE/ToolACE-2-8B", "toolace", True),
    ("watt-ai/watt-tool-8B", "watt", True),
    ("Salesforce/Llama-xLAM-2-8b-fc-r", "xlam2", True),
    ("meetkai/functionary-medium-v3.1", "fcm", True),
    ("gorilla-llm/gorilla-openfunctions-v2", "gorilla", True),
    ("Qwen/Qwen3-8B", "qwen3", False),
    ("zai-org/GLM-4.5", "generic", False),
])
def test_oracle_replies_in_each_familys_format_pass_its_parse_rule(tmp_path: Path, model: str, family: str,
                                                                   documented: bool) -> None:
    """Gold replies written as each family writes them go through its rule, the paper conversation and the
    lenient checker to 100%; the manifest says whether the rule is documented or inferred."""
    done = invoke([*_oracle(tmp_path / "r", model), "--protocol", "paper"])
    assert done.exit_code == 0, done.output
    name = model.replace("/", "_")
    metric = json.loads((tmp_path / "r" / "score" / name / "Wild-Tool-Bench_metric.json").read_text(encoding="utf-8"))
    assert metric["total_info"]["task"]["accuracy"] == 1.0
    protocol = json.loads((tmp_path / "r" / "manifest.json").read_text(encoding="utf-8"))["protocol"]
    assert (protocol["family"]["name"], protocol["documented"], bool(protocol["inferred"])) == (
        family, documented, not documented)
    # the main job and `report` say when the rule is inferred (report: after the row's label)
    note = f"note: the paper-protocol rule `{family}` is inferred, not documented by the paper's harness"
    assert (note in done.output) is not documented
    from click.testing import CliRunner

    from wtb_local.cli import cli

    report = CliRunner().invoke(cli, ["report", str(tmp_path / "r"), "--table", "6", "--no-paper"])
    assert (f"note: {name} [paper-lenient]: the paper-protocol rule `{family}` is inferred" in report.output) \
        is not documented


def test_paper_family_option_lists_every_rule_and_needs_the_paper_protocol(tmp_path: Path) -> None:
    from wtb_local.benchmark.protocols.families import RULES
    from wtb_local.cli.run import run

    option = next(p for p in run.params if p.name == "paper_family")
    assert set(option.type.choices) == set(RULES)
    done = invoke([*_oracle(tmp_path / "r"), "--paper-family", "qwen"])
    assert done.exit_code != 0
    assert "--paper-family applies to --protocol paper only" in done.output


def test_values_the_protocol_replaces_are_named_in_one_line_and_recorded(tmp_path: Path) -> None:
    """`--protocol paper` generates with the family's settings (docs/evaluation.md): a value the user gave
    that it replaces is named in one warning line, and the manifest records the value used and why."""
    done = _cli(*_oracle(tmp_path / "oracle", QWEN, "--protocol", "paper", "--max-new-tokens", "99", "--limit", "1"))
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("warning:")] == [
        ("warning: --protocol paper uses the qwen family's generation settings: replaced --max-new-tokens 99 "
        "with 512")]
    manifest = json.loads((tmp_path / "oracle" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["sampling"]["max_new_tokens"] == 512
    assert manifest["max_new_tokens_from"] == "protocol paper (family qwen), replacing the given 99"
    assert manifest["sources"]["sampling.max_new_tokens"] == manifest["max_new_tokens_from"]
    assert manifest["sources"]["sampling.temperature"] == "protocol paper (family qwen)"

    from tests.helpers import build_tiny_model
    from tests.run.fake_openai import fake_openai_server

    model = build_tiny_model(tmp_path / "Qwen2.5-tiny", chat_template(QWEN),
                             special_tokens=["<tool_call>", "</tool_call>"], max_position_embeddings=8192)
    with fake_openai_server(str(model)) as server:
        sampled = _cli("--model", str(model), "--backend", "openai", "--base-url", server.base_url, "--paper-family",
                       "qwen", "--protocol", "paper", "--dataset", "sample", "--limit", "1", "--out",
                       str(tmp_path / "server"), "--progress", "none", "--temperature", "0.7", "--top-p", "0.9",
                       env={"WTB_MAX_NEW_TOKENS": "99", "HF_HUB_OFFLINE": "1"})
    assert sampled.returncode == 0, sampled.stderr
    assert [line for line in sampled.stderr.splitlines() if line.startswith("warning:")] == [
        ("warning: --protocol paper uses the qwen family's generation settings: replaced WTB_MAX_NEW_TOKENS 99 "
        "with 512, --temperature 0.7 with the model's default, --top-p 0.9 with the model's default")]
    manifest = json.loads((tmp_path / "server" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["sampling"] == {"max_new_tokens": 512, "seed": 0, "temperature": None, "top_p": None}
    assert {k: v for k, v in manifest["sources"].items() if k.startswith("sampling.")} == {
        "sampling.max_new_tokens": "protocol paper (family qwen), replacing the given 99",
        "sampling.seed": "default",
        "sampling.temperature": "protocol paper (family qwen), replacing the given 0.7",
        "sampling.top_p": "protocol paper (family qwen), replacing the given 0.9"}
