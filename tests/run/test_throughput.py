"""The throughput block of every run: engine-busy time, the runner's own time per step, prefix-cache hits
(per step in the result file, summed in the manifest and printed in the run summary)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.contract.sections import ThroughputSection
from wtb_local.engines.oracle import OracleBackend
from wtb_local.run import RunOptions, run_job_async
from wtb_local.run.loop.throughput import ThroughputMeter, run_end_line, summary_line


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_meter_counts_busy_time_as_the_union_of_requests_in_flight() -> None:
    clock = FakeClock()
    meter = ThroughputMeter(clock)
    meter.request_sent()  # t=100: busy from here
    clock.t = 101.0
    meter.request_sent()
    clock.t = 102.0
    meter.request_done()
    clock.t = 103.0
    meter.request_done()  # idle at 103: 3 s busy
    clock.t = 105.0
    meter.request_sent()
    clock.t = 106.0
    meter.request_done()  # 1 s more
    meter.step(render_s=0.001, tokenise_s=0.0005, parse_s=0.0005, judge_s=0.001, prompt_tokens=100,
               generated_tokens=10, cached_tokens=80)
    meter.step(render_s=0.002, tokenise_s=0.001, parse_s=0.001, judge_s=0.001, prompt_tokens=300,
               generated_tokens=30, cached_tokens=None)
    meter.step(render_s=0.001, parse_s=0.0005, judge_s=0.0005, prompt_tokens=100, generated_tokens=20,
               cached_tokens=20)
    meter.session_written(0.006)
    meter.writer_busy_s = 0.0123
    clock.t = 110.0
    summary = meter.summary(tasks=2)
    assert summary == {
        "wall_s": 10.0, "tasks": 2, "steps": 3, "tasks_per_s": 0.2, "generated_tokens_per_s": 6.0,
        "prompt_tokens_per_s": 50.0, "engine_busy_s": 4.0, "engine_busy_share": 0.4,
        "prompt_tokens": 500, "generated_tokens": 60, "cached_prompt_tokens": 100,
        # hits over the prompts whose hits were reported: 100 of 200 tokens
        "prefix_cache_hit_rate": 0.5,
        "runner_ms_per_step": 5.3333, "runner_ms_per_step_max": 5.0,
        "runner_ms_breakdown": {"render": 1.3333, "tokenise": 0.5, "parse": 0.6667, "judge": 0.8333,
                                "write": 2.0},
        # 16 ms of the runner's own work in 10 s: it could have fed 3 steps / 0.016 s
        "runner_busy_s": 0.016, "runner_busy_share": 0.0016, "steps_per_s": 0.3,
        "runner_ceiling_steps_per_s": 187.5, "writer_busy_s": 0.012,
        "render_workers": 0, "render_workers_busy_s": None,
    }
    assert summary_line(ThroughputSection.model_validate(summary)) == (
        "throughput: 0.20 tasks/s, 6.0 generated tok/s, 50.0 prompt tok/s, prefix cache 50.0% of prompt "
        "tokens, engine busy 40% of 10.0 s, runner 5.333 ms/step, runner busy 0%, could feed 188 steps/s "
        "(ran 0.3)"
    )


class _Pool:  # what the meter reads of a RenderPool
    size, loop_s = 2, 0.003


def test_meter_with_render_workers_counts_rendering_off_the_loop() -> None:
    """With render workers the loop's own time is ipc + parse + judge + write; rendering and tokenising are
    the workers' (reported, not the loop's), and the ceiling is the slower of the loop and the workers."""
    clock = FakeClock()
    meter = ThroughputMeter(clock)
    meter.pool = _Pool()
    meter.step(render_s=0.004, tokenise_s=0.002, parse_s=0.001, judge_s=0.001, prompt_tokens=10,
               generated_tokens=1, cached_tokens=None)
    meter.step(render_s=0.004, tokenise_s=0.002, parse_s=0.001, judge_s=0.001, prompt_tokens=10,
               generated_tokens=1, cached_tokens=None)
    meter.session_written(0.001)
    clock.t = 10.0
    summary = meter.summary(tasks=1)
    assert summary["runner_ms_breakdown"] == {"render": 4.0, "tokenise": 2.0, "parse": 1.0, "judge": 1.0,
                                              "write": 0.5, "ipc": 1.5}
    # the loop: 3 ms ipc + 2 parse + 2 judge + 1 write = 8 ms; the workers: 12 ms over 2 workers = 6 ms
    assert summary["runner_busy_s"] == 0.008 and summary["runner_ms_per_step"] == 4.0
    assert summary["render_workers"] == 2 and summary["render_workers_busy_s"] == 0.012
    assert summary["runner_ceiling_steps_per_s"] == 250.0  # 2 steps / 8 ms: the loop is the slower
    meter.pool.loop_s = 0.0
    assert meter.summary(tasks=1)["runner_ceiling_steps_per_s"] == round(2 / 0.006, 1)  # now the workers


def test_meter_without_cache_reports_says_so() -> None:
    clock = FakeClock()
    meter = ThroughputMeter(clock)
    meter.step(render_s=0.0, parse_s=0.001, prompt_tokens=10, generated_tokens=1, cached_tokens=None)
    meter.request_sent()  # still in flight when the summary is taken: counted up to now
    clock.t = 102.0
    summary = meter.summary(tasks=0)
    assert (summary["prefix_cache_hit_rate"], summary["cached_prompt_tokens"]) == (None, None)
    assert summary["engine_busy_s"] == 2.0
    assert "prefix cache not reported" in summary_line(ThroughputSection.model_validate(summary))


class CachingOracle(OracleBackend):
    """The oracle, reporting a prefix-cache hit for every whole 16-token block but the last of a prompt
    (what a paged cache that held the whole history would serve). It asks for rendered prompts, so prompt
    token counts and render times are real."""

    needs_prompt = True

    async def generate(self, request: GenerationRequest) -> Completion:
        completion = await super().generate(request)
        cached = 16 * ((completion.prompt_tokens - 1) // 16) if completion.prompt_tokens else 0
        return completion.model_copy(update={"cached_tokens": cached, "completion_tokens": 5})


def _steps(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [step["inference_output"] for row in rows for task in row["result"]
            for key, step in task["inference_log"].items() if key.startswith("step_")]


def test_run_records_cache_hits_per_step_and_sums_them_in_the_manifest(tmp_path: Path,
                                                                       qwen_tiny_dir: Path) -> None:
    from wtb_local.run.setup.tokenizer import load_renderer

    # the tiny model's tokenizer renders real token ids, so prompt token counts are real
    settings = RunOptions(backend="oracle", model=str(qwen_tiny_dir), parser="hermes",
                           dataset="sample", out=str(tmp_path), progress="none", limit=3)
    renderer = load_renderer(settings.model)
    backend = CachingOracle(parser="hermes", renderer=renderer)
    outcome = asyncio.run(run_job_async(settings, backend=backend, renderer=renderer))
    steps = _steps(outcome.result_rows)
    prompt_tokens = [n for row in outcome.result_rows for task in row["result"]
                     for n in task["input_token_count"]]
    assert len(steps) == len(prompt_tokens) > 12
    assert [s["cached_tokens"] for s in steps] == [16 * ((n - 1) // 16) for n in prompt_tokens]
    assert all(isinstance(s["runner_ms"], float) and s["runner_ms"] > 0 for s in steps)

    block = outcome.manifest["summary"]["throughput"]
    assert block == outcome.manifest["invocations"][-1]["throughput"]
    cached = sum(s["cached_tokens"] for s in steps)
    assert (block["steps"], block["tasks"]) == (len(steps), 12)
    assert (block["prompt_tokens"], block["cached_prompt_tokens"]) == (sum(prompt_tokens), cached)
    assert block["generated_tokens"] == 5 * len(steps)
    assert block["prefix_cache_hit_rate"] == round(cached / sum(prompt_tokens), 4)
    assert 0 < block["engine_busy_s"] <= block["wall_s"]
    parts = block["runner_ms_breakdown"]
    assert list(parts) == ["render", "tokenise", "parse", "judge", "write"]
    assert all(parts[stage] > 0 for stage in parts)  # the oracle asks for prompts: every stage runs
    assert abs(block["runner_ms_per_step"] - sum(parts.values())) < 1e-3
    per_step = sum(parts[stage] for stage in ("render", "tokenise", "parse", "judge"))
    assert abs(per_step - sum(s["runner_ms"] for s in steps) / len(steps)) < 1e-2
    _assert_ceiling_consistent(block)
    on_disk = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert on_disk["summary"]["throughput"] == block


def _assert_ceiling_consistent(block: dict[str, Any]) -> None:
    """The runner's ceiling fields agree with the rest of the block (docs/runner-speed.md §4)."""
    steps, wall, busy = block["steps"], block["wall_s"], block["runner_busy_s"]
    assert abs(busy - block["runner_ms_per_step"] * steps / 1000) < 2e-3
    # busy and wall are written rounded to 1 ms: the share (from the unrounded figures) agrees within what
    # that rounding moves a ratio of two such numbers
    slack = 0.0005 * (1 + busy / wall) / wall + 1e-4
    assert 0 < busy <= wall and abs(block["runner_busy_share"] - busy / wall) <= slack
    assert abs(block["runner_ceiling_steps_per_s"] - steps / busy) / (steps / busy) <= 0.0005 / busy + 0.01
    # the runner cannot have fed more steps than its own time allowed
    assert abs(block["steps_per_s"] - steps / wall) / (steps / wall) <= 0.0005 / wall + 0.01
    assert block["steps_per_s"] <= block["runner_ceiling_steps_per_s"]
    assert block["writer_busy_s"] is not None and 0 < block["writer_busy_s"] <= wall


def test_cli_prints_the_throughput_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "wtb_local", "--model", "Qwen/Qwen2.5-7B-Instruct", "--backend", "oracle",
         "--dataset", "sample", "--limit", "2", "--out", str(out), "--progress", "none"],
        env=dict(os.environ), capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    block = manifest["summary"]["throughput"]
    assert (block["tasks"], block["prefix_cache_hit_rate"]) == (8, None)  # the oracle has no cache
    line = next(x for x in proc.stdout.splitlines() if x.startswith("throughput: "))
    assert line == summary_line(ThroughputSection.model_validate(block))
    assert "prefix cache not reported" in line and f"runner {block['runner_ms_per_step']:.3f} ms/step" in line
    assert f"could feed {block['runner_ceiling_steps_per_s']:.0f} steps/s" in line


def test_cli_instant_backend_runs_every_stage_and_records_the_runner_ceiling(tmp_path: Path) -> None:
    """`--backend instant` (docs/runner-speed.md §1) through the real CLI: real template, tokenizer, parser,
    judge and store, no engine; every task is answered with its gold reply, so the run scores 100%, and
    the manifest's throughput block carries the runner's busy share and ceiling, consistent."""
    from tests.helpers import build_tiny_tokenizer

    templates = Path(__file__).resolve().parents[1] / "fixtures" / "rendering" / "chat_templates.json"
    template = json.loads(templates.read_text(encoding="utf-8"))["Qwen/Qwen3-0.6B"]["chat_template"]
    model = build_tiny_tokenizer(tmp_path / "tokenizer", template, special_tokens=["<tool_call>", "</tool_call>"],
                                 vocab_size=1024, max_position_embeddings=1 << 17)
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "wtb_local", "--model", str(model), "--backend", "instant", "--parser", "hermes",
         "--dataset", "sample", "--out", str(out), "--progress", "none"],
        env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["backend"]["backend"] == "instant" and manifest["backend"]["format_fallbacks"] == 0
    assert manifest["summary"]["task_accuracy"]["accuracy"] == 1.0
    block = manifest["summary"]["throughput"]
    assert block["tasks"] == 32 and block["steps"] == manifest["backend"]["written"]
    assert all(block["runner_ms_breakdown"][stage] > 0 for stage in block["runner_ms_breakdown"])
    _assert_ceiling_consistent(block)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("throughput: "))
    assert line == summary_line(ThroughputSection.model_validate(block))


def test_the_run_end_line_prints_only_figures_measured_now() -> None:
    written = {"steps": 3, "tasks_per_s": 0.2, "generated_tokens_per_s": 6.0, "prompt_tokens_per_s": 50.0,
               "prefix_cache_hit_rate": None, "engine_busy_share": 0.5, "wall_s": 4.0, "runner_ms_per_step": 1.0}
    block = ThroughputSection.model_validate(written)
    measured = run_end_line(block, ran=True)
    assert measured == ("throughput: 0.20 tasks/s, 6.0 generated tok/s, 50.0 prompt tok/s, prefix cache not "
                        "reported, engine busy 50% of 4.0 s, runner 1.000 ms/step")
    assert run_end_line(block, ran=False) == measured.replace(
        "throughput:", "throughput of the earlier invocation (recorded, not measured now):")
    replayed = ThroughputSection.model_validate({**written, "generated_tokens_per_s": 12.5})
    now = ThroughputSection.model_validate({**written, "generated_tokens_per_s": 205606.0})
    assert run_end_line(now, ran=True, replayed=replayed, replay=True) == measured.replace(
        "6.0 generated", "12.5 generated").replace(
        "throughput:", "throughput of the replayed run (recorded, not measured now):")
    assert run_end_line(block, ran=True, replayed=None, replay=True) == (
        "throughput: not measured (a replay answers with recorded completions)")
    assert run_end_line(ThroughputSection.model_validate({"steps": 0}), ran=True) is None
    assert run_end_line(ThroughputSection(), ran=False) is None


def test_rerunning_a_finished_run_marks_its_throughput_as_recorded(tmp_path: Path) -> None:
    from tests.run.conftest import invoke

    args = ["--backend", "oracle", "--model", "Qwen/Qwen2.5-7B-Instruct", "--dataset", "sample", "--limit", "1",
            "--out", str(tmp_path), "--progress", "none"]
    first = invoke(args, env={"HF_HUB_OFFLINE": "1"})
    assert first.exit_code == 0, first.output
    assert next(x for x in first.stdout.splitlines() if "throughput" in x).startswith("throughput: ")
    again = invoke(args, env={"HF_HUB_OFFLINE": "1"})
    assert again.exit_code == 0, again.output
    lines = [x for x in again.stdout.splitlines() if "throughput" in x]
    assert len(lines) == 1
    assert lines[0].startswith("throughput of the earlier invocation (recorded, not measured now): ")
