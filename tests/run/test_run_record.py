"""What a run says about itself (docs/files.md, "Manifest"): sampling actually used, the checkout, one
place per fact in the manifest, the printed tables saved next to the results; older manifests still resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _wtb(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "WTB_PROGRESS": "none"}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], check=False, capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


def test_manifest_holds_each_fact_once_and_the_tables_are_saved(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _wtb(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "2",
                 "--out", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    for gone in ("model", "sampling", "seed", "wtb_local_version"):
        assert gone not in manifest
    assert manifest["config"]["model"] == "Qwen/Qwen3-8B" and manifest["config"]["sampling"]["seed"] == 0
    assert not set(manifest["settings"]) & set(manifest["config"]) and "dataset" not in manifest["settings"]
    assert "sha256" not in manifest["dataset"] and manifest["dataset"]["source"] == "sample"
    assert "wtb-local" not in manifest["packages"]
    assert manifest["sampling_used"] == {"source": "none: the oracle backend does not sample"}
    # the manifest points only at files in the repository
    assert manifest["protocol"] == {"name": "release", "checker": "strict",
                                    "rules": "the released evaluator (docs/evaluation.md)"}
    assert (ROOT / "docs" / "evaluation.md").is_file()
    # where each value came from (docs/files.md, "Manifest")
    sources = manifest["sources"]
    assert (sources["model"], sources["backend"], sources["dataset"], sources["sampling.max_new_tokens"]) == (
        "given (--model)", "given (--backend)", "given (--dataset)", "the default with thinking off")
    assert (sources["parser"], sources["model_name"]) == ("chosen from the template and model id", "the model id")
    assert manifest["max_new_tokens_from"] == "the default with thinking off"  # no tokenizer: no prompt
    checkout = manifest["wtb_local"]
    if (ROOT / ".git").exists():
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=False, capture_output=True, text=True)
        assert checkout["git_commit"] == head.stdout.strip() and isinstance(checkout["git_dirty"], bool)

    printed = done.stdout[done.stdout.index("Table 6"):]
    notes = [line for line in printed.splitlines() if line.startswith("note:")]
    tables = printed[: printed.index(notes[0])]
    # the run-health lines the run printed before its tables, then the notes
    health = [line for line in done.stdout.splitlines() if line.startswith("steps cut at the token limit")]
    assert health == ["steps cut at the token limit: 0 of 17 (0.00%), 0 inside reasoning (max_new_tokens 512)"]
    assert len(notes) == 6 and (out / "summary.md").read_text() == (
        f"```text\n{tables}```\n" + "".join(f"\n{line}\n" for line in [*health, *notes]))
    # what the HTML's legends say, under the tables too: the uncertainty lines, AP, OP
    assert [note[:22] for note in notes[:3]] == ["note: ± se: standard e", "note: AP (accomplished",
                                                 "note: OP (optimal path"]
    # no prompt rendered, no mode recorded: the row of Qwen3's template default, said in a note
    assert notes[4] == ("note: paper row Qwen3-8B-Thinking: the run records no thinking mode (its manifest says: "
                        "no prompt rendered: unknown); compared as its model's chat template behaves without a "
                        "switch: Qwen3's chat template thinks unless enable_thinking=false (--no-thinking: Qwen3-8B)")
    data = json.loads((out / "summary.json").read_text())
    assert [row["label"] for row in data["rows"]] == ["Qwen_Qwen3-8B", "paper: Qwen3-8B-Thinking"]
    assert data["rows"][0]["tables"]["6"]["task"] == 100.0 and data["rows"][0]["tables"]["7"]["OP"] == 100.0
    # the uncertainty as numbers: 8 of 8 tasks in 2 sessions (se 0, Wilson's low 8 / (8 + 1.96^2)), 2 of 2
    # sessions (2 / (2 + 1.96^2))
    uncertainty = data["rows"][0]["uncertainty"]["6"]
    assert {key: uncertainty["task"][key] for key in ("se", "low", "high", "n", "sessions")} == {
        "se": 0.0, "low": 67.5592, "high": 100.0, "n": 8, "sessions": 2}
    assert {key: uncertainty["session"][key] for key in ("se", "low", "high", "n")} == {
        "se": 0.0, "low": 34.238, "high": 100.0, "n": 2}
    assert "uncertainty" not in data["rows"][1]  # the paper's row: it gives none
    assert data["notes"] == notes and data["health"] == health


def test_sampling_used_is_resolved_from_generation_config(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from wtb_local.contract.schema import SamplingConfig
    from wtb_local.run.record.run_record import sampling_used
    from wtb_local.run.setup.resolved import ResolvedRun

    generation = json.loads((qwen_tiny_dir / "generation_config.json").read_text())
    settings = ResolvedRun(model=str(qwen_tiny_dir), backend="transformers", sampling=SamplingConfig(top_p=0.5))
    used = sampling_used(settings)
    assert used["source"] == "generation_config.json, overridden by the options"
    assert used["top_p"] == 0.5 and used["max_new_tokens"] == 512 and used["seed"] == 0
    assert used["do_sample"] == bool(generation.get("do_sample", False))
    assert used["top_k"] == generation.get("top_k", 50)
    server = sampling_used(settings.model_copy(update={"backend": "openai-chat"}))
    assert server == {"source": "the server's defaults, except the values sent", "sent": {"top_p": 0.5},
                      "max_new_tokens": 512, "seed": 0}


def test_an_older_manifest_still_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "1",
            "--out", str(out)]
    assert _wtb(args, tmp_path).returncode == 0
    manifest = json.loads((out / "manifest.json").read_text())
    # the layout before this change: duplicated model/sampling/dataset facts, no sampling_used
    manifest.pop("sampling_used")
    manifest.update(model={"id": "Qwen/Qwen3-8B"}, sampling=manifest["config"]["sampling"], seed=0,
                    wtb_local_version="0.1.0")
    (out / "manifest.json").write_text(json.dumps(manifest))
    again = _wtb([*args[:-4], "--limit", "2", "--out", str(out)], tmp_path)
    assert again.returncode == 0, again.stderr
    assert "1 finished session(s) skipped, 1 to run" in again.stderr


def test_a_rerun_that_runs_nothing_keeps_the_throughput_of_the_run(tmp_path: Path) -> None:
    """The same command again on a finished run: every session is skipped, and the summary keeps the
    figures of the invocation that ran them (not zeros); the no-op invocation is recorded as such."""
    out = tmp_path / "run"
    args = ["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--limit", "2", "--out", str(out)]
    first = _wtb(args, tmp_path)
    assert first.returncode == 0, first.stderr
    before = json.loads((out / "manifest.json").read_text())
    assert before["summary"]["throughput"]["steps"] > 0
    again = _wtb(args, tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"resuming {out}: 2 finished session(s) skipped, 0 to run" in again.stderr
    after = json.loads((out / "manifest.json").read_text())
    assert after["status"] == "complete"
    assert after["summary"]["throughput"] == before["summary"]["throughput"]
    assert after["invocations"][0] == before["invocations"][0]
    assert after["invocations"][1]["sessions_run"] == 0 and after["invocations"][1]["throughput"]["steps"] == 0
