"""`--repeats K`: K seeds as one run, mean ± standard error in `run` and `report`, resumable per repeat
(docs/gpus-and-slurm.md, "Repeats with error bars"), and refused where repeats cannot differ
(docs/architecture.md, "Backends describe themselves")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.run.conftest import scripted_args
from tests.run.fake_openai import fake_openai_server
from wtb_local.analysis.commands.repeat_runs import error_bar_line, mean_and_stderr, mean_metric, repeat_seed

ROOT = Path(__file__).resolve().parents[2]


def _wtb(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "WTB_PROGRESS": "none"}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


def test_mean_and_standard_error() -> None:
    mean, stderr = mean_and_stderr([0.5, 0.75, 1.0])
    assert mean == 0.75 and stderr == 0.14433756729740643  # sample sd 0.25 over sqrt(3)
    assert mean_and_stderr([0.4]) == (0.4, 0.0)
    merged = mean_metric([{"model_name": "m", "total_info": {"task": {"accuracy": 0.5, "total_count": 4}}},
                          {"model_name": "m", "total_info": {"task": {"accuracy": 1.0, "total_count": 4}}}])
    assert merged == {"model_name": "m", "total_info": {"task": {"accuracy": 0.75, "total_count": 4.0}}}
    summary = {"repeats": 3, "task_accuracy": {"mean": 0.75, "stderr": 0.14433756729740643},
               "session_accuracy": {"mean": 0.5, "stderr": 0.0}}
    assert error_bar_line("M", summary) == ("M: task accuracy 75.00 ± 14.43, session accuracy 50.00 ± 0.00 "
                                            "(mean ± standard error over 3 repeats)")


def test_repeat_seeds_are_derived_with_sha256() -> None:
    assert repeat_seed(0, 0) == 0 and repeat_seed(7, 0) == 7
    # `printf '0/repeat/1' | sha256sum`: 7111ac7e..., 37eafb17... (first 31 bits)
    assert [repeat_seed(0, r) for r in (1, 2)] == [0x7111AC7E & 0x7FFFFFFF, 0x37EAFB17 & 0x7FFFFFFF]
    assert repeat_seed(1, 1) != repeat_seed(0, 1)


def _server_args(model_dir: Path, base_url: str, out: Path, *extra: str) -> list[str]:
    return ["--model", str(model_dir), "--model-name", "tiny", "--backend", "openai", "--base-url", base_url,
            "--dataset", "sample", "--limit", "2", "--out", str(out), *extra]


def test_repeats_run_report_and_resume(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    """Three seeds of a sampled run on a server whose replies depend on the request seed: the ± line of
    `run` and `report` is the summary's mean and standard error."""
    with fake_openai_server(str(qwen_tiny_dir), vary_by_seed=True) as server:
        args = _server_args(qwen_tiny_dir, server.base_url, tmp_path / "run", "--temperature", "0.7",
                            "--repeats", "3")
        done = _wtb(args, tmp_path)
        assert done.returncode == 0, done.stderr
        summary = json.loads((tmp_path / "run" / "repeats.json").read_text())
        assert summary["seeds"] == [0, repeat_seed(0, 1), repeat_seed(0, 2)]
        values = summary["task_accuracy"]["values"]
        assert len(values) == 3 and len(set(values)) > 1  # the seeds gave different replies
        mean, stderr = mean_and_stderr(values)
        assert (summary["task_accuracy"]["mean"], summary["task_accuracy"]["stderr"]) == (mean, stderr)
        line = error_bar_line("tiny", summary)
        assert done.stdout.strip().splitlines()[-1] == line
        # each repeat's health lines, as `run` prints them, after its seed: the server refused some prompts
        seeds = [f"repeat {r + 1} (seed {seed}): " for r, seed in enumerate(summary["seeds"])]
        assert [text for text in done.stdout.splitlines() if text.startswith("repeat ")] == [
            f"{seed}steps cut at the token limit: 0 of 8 (0.00%), 0 inside reasoning (max_new_tokens 512)"
            for seed in seeds]
        refused = ("request(s) failed and were scored as step errors: prompt too long: HTTP 400 from /completions: "
                   "This model's maximum context length is 8192 tokens. However, your prompt contains 9000 input "
                   "tokens.")
        assert [text for text in done.stderr.splitlines() if text.startswith("repeat ") and "): " in text] == [
            f"{seeds[0]}warning: 2 {refused} (2)", f"{seeds[1]}warning: 4 {refused} (4)"]
        for r, seed in enumerate(summary["seeds"]):
            manifest = json.loads((tmp_path / "run" / "repeats" / str(r) / "manifest.json").read_text())
            assert manifest["config"]["sampling"]["seed"] == seed and manifest["status"] == "complete"

        shown = _wtb(["report", str(tmp_path / "run"), "--table", "6"], tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert line in shown.stdout.splitlines()

        # A lost repeat is run again; the others resume with every session kept.
        (tmp_path / "run" / "repeats" / "2" / "result" / "tiny" / "Wild-Tool-Bench_result.jsonl").unlink()
        again = _wtb(args, tmp_path)
        assert again.returncode == 0, again.stderr
        assert again.stderr.count("2 finished session(s) skipped, 0 to run") == 2
        assert again.stdout.strip().splitlines()[-1] == line


def test_repeats_of_greedy_decoding_are_refused(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    with fake_openai_server(str(qwen_tiny_dir)) as server:
        done = _wtb(_server_args(qwen_tiny_dir, server.base_url, tmp_path / "run", "--temperature", "0",
                                 "--repeats", "2"), tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == ("Error: --repeats 2: greedy decoding (--temperature 0) gives the same replies "
                                   "every time; repeats need sampled decoding")
    assert not (tmp_path / "run").exists()


def test_repeats_of_a_greedy_generation_config_are_refused(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    """No --temperature: the model's generation_config decides, and a greedy one gives one reply per prompt."""
    greedy = tmp_path / "greedy"
    shutil.copytree(qwen_tiny_dir, greedy)
    config = json.loads((greedy / "generation_config.json").read_text())
    (greedy / "generation_config.json").write_text(json.dumps({**config, "do_sample": False}))
    with fake_openai_server(str(greedy)) as server:
        done = _wtb(_server_args(greedy, server.base_url, tmp_path / "run", "--repeats", "2"), tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == ("Error: --repeats 2: greedy decoding (generation_config.json: do_sample false) "
                                   "gives the same replies every time; pass --temperature above 0 for sampled "
                                   "decoding")
    assert not (tmp_path / "run").exists()


def test_options_a_backend_cannot_honour_are_named(tmp_path: Path) -> None:
    """The oracle does not sample: repeats are refused, sampling options are named in one warning line."""
    base = ["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "1"]
    refused = _wtb([*base, "--temperature", "0.7", "--repeats", "2", "--out", str(tmp_path / "r")], tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "warning: the oracle backend does not sample: --temperature 0.7 change nothing",
        "Error: --repeats 2: the oracle backend does not sample; every repeat would give the same replies"]
    assert not (tmp_path / "r").exists()
    warned = _wtb([*base, "--temperature", "0.7", "--top-p", "0.9", "--out", str(tmp_path / "w")], tmp_path)
    assert warned.returncode == 0, warned.stderr
    assert ("warning: the oracle backend does not sample: --temperature 0.7, --top-p 0.9 change nothing"
            in warned.stderr.splitlines())
    scripted = _wtb([*scripted_args(tmp_path / "s"), "--repeats", "2"], tmp_path)
    assert scripted.returncode == 1
    assert scripted.stderr.strip() == ("Error: --repeats 2: the scripted backend replays fixed replies; every "
                                       "repeat would give the same replies")


def test_server_options_on_a_local_backend_are_named(tmp_path: Path) -> None:
    done = _wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "1",
                 "--base-url", "http://127.0.0.1:9/v1", "--server-prompt", "text", "--out", str(tmp_path / "o")],
                tmp_path)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("warning:")] == [
        ("warning: the oracle backend is not a server: --base-url http://127.0.0.1:9/v1 change nothing; sends no "
        "rendered prompt to a server: --server-prompt text change nothing")]
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert "server_prompt" not in manifest["config"] and manifest["settings"]["base_url"] == "http://127.0.0.1:9/v1"


def test_a_repeats_folder_stopped_before_its_repeats_all_ran_is_refused_alike_by_every_reader(tmp_path: Path) -> None:
    """A `run --repeats` stopped between two repeats leaves `repeats/0` and no repeats.json: `report`, `explain`
    and `export` each refuse it in the same one line (its first repeat is not the run), and take the repeat
    itself when given its folder."""
    from click.testing import CliRunner

    from wtb_local.cli import cli

    out = tmp_path / "run"
    first = out / "repeats" / "0"
    done = CliRunner().invoke(cli, ["run", "--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample",
                                    "--limit", "1", "--out", str(first), "--progress", "none"],
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output
    line = (f"Error: {out}: a `run --repeats` folder whose repeats did not all run (1 recorded in {out / 'repeats'}, "
            f"no repeats.json); rerun the same `run --repeats` command to finish it, or give one repeat's folder "
            f"({first})\n")
    for command in (["report", str(out)], ["explain", str(out), str(out)],
                    ["export", str(out), "--to", "leaderboard", str(tmp_path / "row.json")]):
        refused = CliRunner().invoke(cli, command)
        assert (refused.exit_code, refused.stderr, refused.stdout) == (1, line, ""), command
    assert not (tmp_path / "row.json").exists()
    one = CliRunner().invoke(cli, ["report", str(first), "--table", "6"])
    assert one.exit_code == 0 and one.stdout.startswith("Table 6"), one.output
