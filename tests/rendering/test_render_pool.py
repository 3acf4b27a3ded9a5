"""Render workers (wtb_local/formats/rendering/pool.py, docs/runner-speed.md §6): every prompt and its token ids
are the in-process renderer's, byte for byte, with eight real templates over every step of the sample;
only the appended messages travel; a template's error is that step's error, worded as in-process; a dead
worker stops the run in one line; whole runs write the same result file with and without workers."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.rendering.conftest import make_tokenizer, real_templates
from tests.run.conftest import run_files, without_timing
from wtb_local.benchmark.dataset import load_dataset
from wtb_local.benchmark.evaluator.episode import session_episodes
from wtb_local.formats.rendering.pool import PoolError, RenderFailed, RenderPool, auto_workers
from wtb_local.formats.rendering.renderer import PromptRenderer

TEMPLATES = ["Qwen/Qwen3-0.6B", "Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct",
             "openai/gpt-oss-120b", "mistralai/Mistral-Nemo-Instruct-2407", "moonshotai/Kimi-K2-Instruct",
             "zai-org/GLM-4.6", "deepseek-ai/DeepSeek-V3.1"]


def _renderer(key: str) -> PromptRenderer:
    return PromptRenderer(make_tokenizer(real_templates()[key]["chat_template"], name=key), model_id=key)


async def _with_pool(renderer: Any, workers: int, body: Any) -> Any:
    pool = RenderPool(renderer, workers)
    pool.start()
    try:
        await pool.ready()
        return await body(pool)
    finally:
        pool.close()


@pytest.mark.parametrize("key", TEMPLATES)
def test_every_prompt_of_the_sample_equals_in_process_rendering(key: str) -> None:
    """All tasks of all sessions in flight at once (as the runner has them), answered with gold replies
    carrying reasoning: each prompt and its ids from a worker equal the in-process renderer's."""
    local = _renderer(key)
    episodes = [ep for session in load_dataset("sample", quiet=True) for ep in session_episodes(session)]

    async def body(pool: RenderPool) -> int:
        prompts = 0
        while any(not ep.done for ep in episodes):
            live = [ep for ep in episodes if not ep.done]
            built = await asyncio.gather(*(_one(pool, ep) for ep in live), return_exceptions=True)
            for episode, outcome in zip(live, built):
                messages, tools = episode.conversation()
                where = f"{key}: {episode.session_id} task {episode.task_idx} step {episode.step}"
                try:
                    text = local.render_text(messages, tools)
                except Exception as exc:  # noqa: BLE001 - both must fail alike
                    assert isinstance(outcome, RenderFailed), where
                    assert str(outcome) == f"render failed: {type(exc).__name__}: {' '.join(str(exc).split())}"
                else:
                    ids = local.encode_prompt(text, (episode.session_id, episode.task_idx), episode.session_id)
                    assert outcome[:2] == (text, ids), where
                    assert ids == local.encode(text)
                    prompts += 1
                reply = episode.gold_reply()
                if reply.get("tool_calls"):  # reasoning in history: templates drop or keep it by position
                    reply = {**reply, "reasoning_content": f"Thinking about step {episode.step}."}
                episode.accept(reply)
                if episode.done:
                    pool.forget((episode.session_id, episode.task_idx))
        return prompts

    prompts = asyncio.run(_with_pool(_renderer(key), 2, body))
    assert prompts > 60


async def _one(pool: RenderPool, episode: Any) -> Any:
    messages, tools = episode.conversation()
    return await pool.build((episode.session_id, episode.task_idx), episode.session_id, messages, tools)


def test_only_the_appended_messages_travel() -> None:
    renderer = _renderer("Qwen/Qwen3-0.6B")
    episode = session_episodes(load_dataset("sample", quiet=True)[0])[0]
    sent: list[tuple[int, int]] = []

    async def body(pool: RenderPool) -> None:
        send = pool._send

        def spy(worker: Any, message: Any) -> None:
            if message[0] == "render":
                sent.append((message[4], len(message[5])))  # (base, new messages)
            send(worker, message)

        pool._send = spy
        key = (episode.session_id, episode.task_idx)
        messages, tools = episode.conversation()
        await pool.build(key, episode.session_id, messages, tools)
        episode.accept(episode.gold_reply())
        grown, tools = episode.conversation()
        await pool.build(key, episode.session_id, grown, tools)
        copies, _ = episode.request()  # equal, but not the same dicts: sent whole
        text, *_ = await pool.build(key, episode.session_id, copies, tools)
        assert text == renderer.render_text(grown, tools)
        assert sent == [(0, len(messages)), (len(messages), len(grown) - len(messages)), (0, len(grown))]

    asyncio.run(_with_pool(renderer, 1, body))


def test_a_template_error_is_the_steps_error_worded_as_in_process(tmp_path: Path) -> None:
    key = "Qwen/Qwen3-0.6B"
    template = real_templates()[key]["chat_template"]
    failing = ("{%- if messages[-1].content == 'BOOM' %}{{ raise_exception('no BOOM here') }}{%- endif %}"
               + template)
    path = tmp_path / "failing.jinja"
    path.write_text(failing, encoding="utf-8")
    renderer = PromptRenderer(make_tokenizer(template, name=key), model_id=key, chat_template=str(path))
    messages = [{"role": "user", "content": "BOOM"}]
    with pytest.raises(Exception) as local:
        renderer.render_text(messages, [])

    async def body(pool: RenderPool) -> None:
        with pytest.raises(RenderFailed) as remote:
            await pool.build(("s", 0), "s", messages, [])
        assert str(remote.value) == f"render failed: {type(local.value).__name__}: no BOOM here"
        text, *_ = await pool.build(("s", 1), "s", [{"role": "user", "content": "fine"}], [])  # still serving
        assert text == renderer.render_text([{"role": "user", "content": "fine"}], [])

    asyncio.run(_with_pool(renderer, 1, body))


def test_a_worker_that_dies_stops_with_one_line() -> None:
    renderer = _renderer("Qwen/Qwen3-0.6B")

    async def body(pool: RenderPool) -> None:
        os.kill(pool.pids[0], signal.SIGKILL)
        with pytest.raises(PoolError, match=r"^render worker 0 exited \(code -9\)$"):
            await pool.build(("s", 0), "s", [{"role": "user", "content": "hi"}], [])
        with pytest.raises(PoolError, match=r"^render worker 0 exited \(code -9\)$"):  # and stays failed
            await pool.build(("t", 0), "t", [{"role": "user", "content": "hi"}], [])

    asyncio.run(_with_pool(renderer, 1, body))


def _unloadable() -> None:
    raise RuntimeError("cannot be loaded here")


class _Unloadable:
    """Pickles, but its copy cannot be made in a worker (as a tokenizer class the worker cannot import)."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _unloadable, ()


def test_a_renderer_a_worker_cannot_load_falls_back_to_the_loop_in_one_line() -> None:
    import io

    from wtb_local.run.job import _pool_ready

    renderer = _renderer("Qwen/Qwen3-0.6B")
    renderer.poison = _Unloadable()
    err = io.StringIO()

    async def go() -> Any:
        pool = RenderPool(renderer, 2)
        pool.start()
        pids = pool.pids
        started = time.monotonic()
        result = await _pool_ready(pool, err)
        return result, time.monotonic() - started, pids

    result, waited, pids = asyncio.run(go())
    assert result is None and waited < 60  # told at once, not after the start timeout
    # the first worker to answer is named (both fail alike)
    assert err.getvalue() in {f"warning: --render-workers 2: render worker {n} could not start: RuntimeError: "
                              "cannot be loaded here; rendering on the event loop\n" for n in (0, 1)}
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)  # both closed and reaped


def test_auto_leaves_small_runs_and_one_cpu_on_the_loop() -> None:
    assert auto_workers(16, 1024) == 8 and auto_workers(4, 1024) == 3 and auto_workers(2, 64) == 1
    assert auto_workers(16, 63) == 0 and auto_workers(1, 1024) == 0 and auto_workers(16, 32) == 0


def _rows(run: Path) -> list[dict[str, Any]]:
    """The result lines without what is timed (each step's runner_ms, each request's latency)."""
    (path,) = run.glob("result/*/*.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        for task in row["result"]:
            task.pop("latency")
            for key, step in task["inference_log"].items():
                if key.startswith("step_"):
                    step["inference_output"].pop("runner_ms")
    return rows


def test_a_run_with_render_workers_writes_the_same_results(tmp_path: Path) -> None:
    """The real CLI, instant backend (every step rendered, tokenised, parsed, judged): `--render-workers 2`
    (given as its WTB_ twin) and `--render-workers 0` write the same result lines; the manifest records the
    value with its source, and the throughput block the workers' share."""
    from tests.helpers import build_tiny_tokenizer

    template = real_templates()["Qwen/Qwen3-0.6B"]["chat_template"]
    model = build_tiny_tokenizer(tmp_path / "tokenizer", template, special_tokens=["<tool_call>", "</tool_call>"],
                                 vocab_size=1024, max_position_embeddings=1 << 17)
    runs = {}
    for workers, extra, env in (("0", ["--render-workers", "0"], {}), ("2", [], {"WTB_RENDER_WORKERS": "2"}),
                                ("auto", [], {})):
        out = tmp_path / f"run-{workers}"
        proc = subprocess.run(
            [sys.executable, "-m", "wtb_local", "--model", str(model), "--backend", "instant", "--parser", "hermes",
             "--dataset", "sample", "--out", str(out), "--progress", "none", *extra],
            env={**os.environ, "HF_HUB_OFFLINE": "1", **env}, capture_output=True, text=True, timeout=600,
            check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs[workers] = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        runs[workers]["rows"] = _rows(out)
    assert runs["2"]["rows"] == runs["0"]["rows"] == runs["auto"]["rows"]
    assert runs["2"]["summary"]["task_accuracy"]["accuracy"] == 1.0
    assert runs["0"]["sources"]["render_workers"] == "given (--render-workers)"
    assert runs["2"]["sources"]["render_workers"] == "given (WTB_RENDER_WORKERS)"
    cpus = len(os.sched_getaffinity(0))
    assert runs["auto"]["sources"]["render_workers"] == f"auto ({cpus} CPUs, 32 episodes)"
    pooled, local = runs["2"]["summary"]["throughput"], runs["0"]["summary"]["throughput"]
    assert pooled["render_workers"] == 2 and local["render_workers"] == runs["auto"]["summary"]["throughput"][
        "render_workers"] == 0
    assert set(pooled["runner_ms_breakdown"]) == {"render", "tokenise", "parse", "judge", "write", "ipc"}
    assert set(local["runner_ms_breakdown"]) == {"render", "tokenise", "parse", "judge", "write"}
    assert pooled["render_workers_busy_s"] > 0 and local["render_workers_busy_s"] is None
    # the loop's own time leaves rendering out; the ceiling is the slower of the loop and the workers
    parts = pooled["runner_ms_breakdown"]
    loop_ms = parts["ipc"] + parts["parse"] + parts["judge"] + parts["write"]
    assert abs(pooled["runner_ms_per_step"] - loop_ms) <= 0.001
    slowest = max(pooled["runner_busy_s"], pooled["render_workers_busy_s"] / 2)
    assert abs(pooled["runner_ceiling_steps_per_s"] - pooled["steps"] / slowest) <= 0.05 + 0.01 * pooled["steps"] / slowest


def test_render_workers_on_a_run_without_rendering_say_they_change_nothing(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "wtb_local", "--backend", "oracle", "--parser", "hermes", "--dataset", "sample", "--limit", "1",
         "--out", str(tmp_path / "run"), "--progress", "none", "--render-workers", "3"],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "warning: --render-workers 3 changes nothing: the backend renders no prompts\n" in proc.stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["sources"]["render_workers"] == "the backend renders no prompts"
    assert manifest["summary"]["throughput"]["render_workers"] == 0


def test_a_bad_value_is_refused_in_one_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "wtb_local", "--backend", "oracle", "--render-workers", "two"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert "'two' is not a number of processes (0, 1, 2, ...) or auto" in proc.stderr


def test_a_worker_killed_mid_run_stops_the_run_in_one_line_and_the_rerun_resumes(tmp_path: Path) -> None:
    """The real CLI with two render workers over 256 sessions; one worker is SIGKILLed mid-run: a machine
    fault (`render_worker_died`, docs/reliability.md), so the run stops with one line naming it (exit 1, no
    traceback), keeps its finished sessions, and the same command resumes to the files of an uninterrupted
    run."""
    from tests.helpers import build_tiny_tokenizer
    from tests.helpers.procs import children
    from tests.run.test_signals import replicated_sample

    template = real_templates()["Qwen/Qwen3-0.6B"]["chat_template"]
    model = build_tiny_tokenizer(tmp_path / "tokenizer", template, special_tokens=["<tool_call>", "</tool_call>"],
                                 vocab_size=1024, max_position_embeddings=1 << 17)
    dataset = replicated_sample(32, tmp_path / "big.jsonl")
    out = tmp_path / "run"
    args = [sys.executable, "-m", "wtb_local", "--model", str(model), "--backend", "instant", "--parser", "hermes",
            "--dataset", str(dataset), "--out", str(out), "--progress", "none", "--render-workers", "2"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result_file = out / "result" / "tokenizer" / "Wild-Tool-Bench_result.jsonl"
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 240
        while not (result_file.exists() and result_file.stat().st_size > 0):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        workers = children(proc.pid)
        assert len(workers) == 2
        os.kill(workers[1], signal.SIGKILL)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1 and "Traceback" not in stderr, stderr
    kept = len(result_file.read_text(encoding="utf-8").splitlines())
    assert 1 <= kept < 256
    index = sorted(workers).index(workers[1])  # workers are numbered in the order they were started
    assert stderr.strip().splitlines()[-1] == (
        f"Error: machine fault (render_worker_died): render worker {index} exited (code -9); run stopped, {kept} "
        f"finished session(s) kept in {result_file}; rerun the same command to resume")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "failed" and manifest["invocations"][-1]["faults"] == {"render_worker_died": 1}

    resumed = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"{kept} finished session(s) skipped, {256 - kept} to run" in resumed.stderr
    assert len(result_file.read_text(encoding="utf-8").splitlines()) == 256
    clean = tmp_path / "clean"
    uninterrupted = subprocess.run([*args[:args.index("--out") + 1], str(clean), *args[args.index("--out") + 2:]],
                                   capture_output=True, text=True, env=env, timeout=600, check=False)
    assert uninterrupted.returncode == 0, uninterrupted.stderr[-2000:]
    assert without_timing(run_files(out, "tokenizer")) == without_timing(run_files(clean, "tokenizer"))
