"""The fast prompt paths are audited (wtb_local/formats/rendering/checks.py, docs/runner-speed.md §7): whole runs
of the sample (instant backend, Qwen3's real template, a real tokenizer) with a fast path made to differ
on one prompt (tests/rendering/skewed.py), rendering on the event loop and in render workers, under
`--on-prompt-mismatch reference` and `stop`: the manifest records the mismatch with its step, the prompts
actually sent are the reference path's, and `--verify-prompts` checks exactly the renderings and
tokenisations it says."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.rendering.skewed import CHARACTER, TOKEN, SkewedRenderer, text_sha256
from wtb_local.contract.errors import RunError
from wtb_local.contract.schema import Completion, GenerationRequest
from wtb_local.engines.instant import InstantBackend
from wtb_local.formats.rendering.checks import FIRST, CheckPolicy, PromptChecks, first_difference, parse_every
from wtb_local.formats.rendering.renderer import PromptRenderer
from wtb_local.run.job import run_job_async
from wtb_local.run.setup.options import RunOptions

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "rendering" / "chat_templates.json"
MODEL_ID = "Qwen/Qwen3-0.6B"
TARGET = "wild_tool_bench_{}/1/1"  # session (filled in from the sample), task 1, step 1


class RecordingInstant(InstantBackend):
    """The instant backend, keeping every prompt it was sent (text and ids) by request id."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sent: dict[str, tuple[str, list[int]]] = {}

    async def generate(self, request: GenerationRequest) -> Completion:
        self.sent[request.request_id] = (request.prompt, list(request.prompt_token_ids or []))
        return await super().generate(request)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.helpers import build_tiny_tokenizer

    template = json.loads(TEMPLATES.read_text(encoding="utf-8"))[MODEL_ID]["chat_template"]
    return build_tiny_tokenizer(tmp_path_factory.mktemp("tokenizer"), template,
                                special_tokens=["<tool_call>", "</tool_call>"], vocab_size=1024,
                                max_position_embeddings=1 << 17)


def _renderer(model_dir: Path, cls: type = PromptRenderer, **skews: Any) -> Any:
    from transformers import AutoTokenizer

    return cls(AutoTokenizer.from_pretrained(str(model_dir)), model_id=MODEL_ID, **skews)


def _run(model_dir: Path, out: Path, renderer: Any, **options: Any) -> tuple[Any, RecordingInstant, str]:
    """One run of the whole sample; (outcome or the RunError, the backend, stderr)."""
    from wtb_local.formats.parsers import get_parser

    settings = RunOptions(model=str(model_dir), backend="instant", parser="hermes", dataset="sample", out=str(out),
                          progress="none", **options)
    backend = RecordingInstant(parser=get_parser("hermes"), renderer=renderer)
    err = io.StringIO()
    try:
        outcome: Any = asyncio.run(run_job_async(settings, backend=backend, renderer=renderer, stderr=err))
    except RunError as exc:
        outcome = exc
    return outcome, backend, err.getvalue()


@pytest.fixture(scope="module")
def reference(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, list[int]]]:
    """Every prompt of the sample as the reference path builds it (apply_chat_template, whole-prompt ids)."""
    renderer = _renderer(model_dir)
    outcome, backend, _ = _run(model_dir, tmp_path_factory.mktemp("reference"), renderer, verify_prompts="all")
    assert outcome.manifest["invocations"][-1]["prompt_checks"]["mismatches"] == 0
    for text, ids in backend.sent.values():
        assert ids == renderer.encode(text)
    return backend.sent


def _target(reference: dict[str, tuple[str, list[int]]]) -> tuple[str, str]:
    """The request id and prompt sha256 of the third session's task 1, step 1."""
    sessions = sorted({rid.split("/")[0] for rid in reference}, key=lambda s: int(s.rsplit("_", 1)[1]))
    rid = f"{sessions[2]}/1/1"
    assert rid in reference
    return rid, text_sha256(reference[rid][0])


def _manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


# --- units --------------------------------------------------------------------------------------------


def test_the_policy_checks_the_first_four_and_every_nth() -> None:
    assert [n for n in range(1, 200) if CheckPolicy(64).due(n)] == [1, 2, 3, 4, 64, 128, 192]
    assert [n for n in range(1, 30) if CheckPolicy(10).due(n)] == [1, 2, 3, 4, 10, 20]
    assert all(CheckPolicy(parse_every("all")).due(n) for n in range(1, 100))
    assert (parse_every("all"), parse_every("64"), parse_every(" 7 ")) == (1, 64, 7)
    for bad in ("0", "-1", "some", ""):
        with pytest.raises(ValueError, match="not a positive number or all"):
            parse_every(bad)
    assert FIRST == 4


def test_a_mismatch_names_the_first_difference() -> None:
    assert (first_difference("abcdef", "abXdef"), first_difference("abc", "abcd"), first_difference([1, 2], [1, 3])) == \
        (2, 3, 1)
    checks = PromptChecks(CheckPolicy(1))
    assert checks.fast("tokenisation")
    checks.mismatch("tokenisation", list(range(20)), [*range(10), 99, *range(11, 20)])
    (found,) = checks.take()
    assert (found.path, found.index, found.position) == ("tokenisation", 1, 10)
    assert (found.fast, found.reference) == ([8, 9, 10, 11, 12, 13, 14, 15], [8, 9, 99, 11, 12, 13, 14, 15])
    assert checks.take() == [] and checks.totals() == (0, 0, 0, 1, 1, 0)


# --- whole runs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["rendering", "tokenisation"])
def test_reference_mode_on_the_loop_records_the_mismatch_and_sends_the_reference_prompts(
        path: str, model_dir: Path, reference: dict[str, Any], tmp_path: Path) -> None:
    rid, sha = _target(reference)
    renderer = _renderer(model_dir, SkewedRenderer, **{f"skew_{path}": sha})
    outcome, backend, err = _run(model_dir, tmp_path, renderer, verify_prompts="all")
    assert backend.sent == reference  # every prompt and its ids: the reference path's
    session, task, step = rid.split("/")
    checks = _manifest(tmp_path)["invocations"][-1]["prompt_checks"]
    assert checks == outcome.manifest["invocations"][-1]["prompt_checks"]
    first = checks["first_mismatch"]
    index = first.pop("index")
    text, ids = reference[rid]
    expected = {"session": session, "task": int(task), "step": int(step), "path": path,
                "where": "the event loop"}
    if path == "rendering":
        start = CHARACTER - 10 if CHARACTER >= 10 else 0
        expected.update(position=CHARACTER, reference=text[start:start + 40])
    else:
        expected.update(position=TOKEN, reference=ids[TOKEN - 2:TOKEN + 6])
    assert {k: v for k, v in first.items() if k != "fast"} == expected
    assert first["fast"] != first["reference"]
    steps = len(reference)
    other = "tokenisation" if path == "rendering" else "rendering"
    # from the mismatch on, that path is the reference's alone; the other one is untouched and all checked
    assert checks[path] == {"fast": index, "checked": index, "reference": steps - index}
    assert checks[other] == {"fast": steps, "checked": steps, "reference": 0}
    assert (checks["every"], checks["first"], checks["on_mismatch"], checks["mismatches"]) == (1, 4, "reference", 1)
    assert len(checks["notes"]) == 1 and checks["notes"][0].startswith("event loop: ")
    unit, against = ("character", "apply_chat_template") if path == "rendering" else \
        ("token", "whole-prompt tokenisation")
    assert err.splitlines() == [(
        f"warning: prompt check: the fast {path} of {session} task {task} step {step} (the event loop) differed "
        f"from {against} at {unit} {expected['position']}: that prompt and all later ones use {against} "
        "(manifest: prompt_checks)")]
    assert outcome.manifest["status"] == "complete"
    assert outcome.manifest["settings"]["verify_prompts"] == "all"
    assert outcome.manifest["sources"]["verify_prompts"] == "given (--verify-prompts)"
    assert outcome.manifest["sources"]["on_prompt_mismatch"] == "default"


def test_stop_mode_on_the_loop_stops_before_the_prompt_is_sent(model_dir: Path, reference: dict[str, Any],
                                                               tmp_path: Path) -> None:
    rid, sha = _target(reference)
    renderer = _renderer(model_dir, SkewedRenderer, skew_rendering=sha)
    error, backend, err = _run(model_dir, tmp_path, renderer, verify_prompts="all", on_prompt_mismatch="stop")
    assert isinstance(error, RunError)
    session, task, step = rid.split("/")
    (result_file,) = (tmp_path / "result").rglob("*.jsonl")
    kept = len([line for line in result_file.read_text(encoding="utf-8").splitlines() if line])
    assert str(error) == (
        f"prompt check: the fast rendering of {session} task {task} step {step} (the event loop) differed from "
        f"apply_chat_template at character {CHARACTER} (--on-prompt-mismatch stop); rerun with "
        f"--on-prompt-mismatch reference to go on with the reference path; {kept} finished session(s) kept in "
        f"{result_file}")
    assert "\n" not in str(error) and err == ""
    assert rid not in backend.sent and backend.sent
    assert all(reference[key] == sent for key, sent in backend.sent.items())
    manifest = _manifest(tmp_path)
    assert manifest["status"] == "failed"
    invocation = manifest["invocations"][-1]
    assert invocation["failure"].startswith("PromptMismatchError: prompt check: the fast rendering of ")
    checks = invocation["prompt_checks"]
    assert (checks["mismatches"], checks["on_mismatch"]) == (1, "stop")
    assert {k: checks["first_mismatch"][k] for k in ("session", "task", "step", "path", "position")} == \
        {"session": session, "task": int(task), "step": int(step), "path": "rendering", "position": CHARACTER}


@pytest.mark.slow
@pytest.mark.timeout(600)  # render worker processes on a tiny model, a run each: minutes on 2 shared cores
@pytest.mark.parametrize("path", ["rendering", "tokenisation"])
def test_reference_mode_in_render_workers_turns_the_path_off_in_every_worker(
        path: str, model_dir: Path, reference: dict[str, Any], tmp_path: Path) -> None:
    rid, sha = _target(reference)
    renderer = _renderer(model_dir, SkewedRenderer, **{f"skew_{path}": sha})
    outcome, backend, err = _run(model_dir, tmp_path, renderer, verify_prompts="all", render_workers="2")
    assert outcome.manifest["summary"]["throughput"]["render_workers"] == 2
    assert backend.sent == reference
    session, task, step = rid.split("/")
    checks = outcome.manifest["invocations"][-1]["prompt_checks"]
    first = checks["first_mismatch"]
    assert (first["session"], first["task"], first["step"], first["path"]) == (session, int(task), int(step), path)
    assert first["position"] == (CHARACTER if path == "rendering" else TOKEN)
    assert first["where"] in ("render worker 0", "render worker 1") and checks["mismatches"] == 1
    steps = len(reference)
    assert checks[path]["fast"] == checks[path]["checked"] and checks[path]["fast"] + checks[path]["reference"] == steps
    assert checks[path]["reference"] > 0
    other = "tokenisation" if path == "rendering" else "rendering"
    assert checks[other] == {"fast": steps, "checked": steps, "reference": 0}
    # the worker that found it, and the other one told to follow (it renders after the early mismatch)
    finder = first["where"]
    follower = "render worker 1" if finder.endswith("0") else "render worker 0"
    assert sorted(note.split(":")[0] for note in checks["notes"]) == sorted([finder, follower])
    assert any(note.startswith(f"{follower}: ") and "a mismatch elsewhere in the run" in note
               for note in checks["notes"])
    assert err.count("warning: prompt check: ") == 1 and f"({finder})" in err


@pytest.mark.slow
@pytest.mark.timeout(600)  # render worker processes on a tiny model, a run each: minutes on 2 shared cores
def test_stop_mode_in_render_workers_stops_before_the_prompt_is_sent(model_dir: Path, reference: dict[str, Any],
                                                                     tmp_path: Path) -> None:
    rid, sha = _target(reference)
    renderer = _renderer(model_dir, SkewedRenderer, skew_tokenisation=sha)
    error, backend, _ = _run(model_dir, tmp_path, renderer, verify_prompts="all", render_workers="2",
                             on_prompt_mismatch="stop")
    assert isinstance(error, RunError) and "\n" not in str(error)
    session, task, step = rid.split("/")
    assert str(error).startswith(f"prompt check: the fast tokenisation of {session} task {task} step {step} "
                                 "(render worker ")
    assert f") differed from whole-prompt tokenisation at token {TOKEN} (--on-prompt-mismatch stop)" in str(error)
    assert rid not in backend.sent
    assert all(reference[key] == sent for key, sent in backend.sent.items())
    manifest = _manifest(tmp_path)
    checks = manifest["invocations"][-1]["prompt_checks"]
    assert manifest["status"] == "failed" and checks["mismatches"] == 1
    assert checks["first_mismatch"]["where"].startswith("render worker ")


def test_the_default_checks_the_first_four_and_every_64th_of_each_path(model_dir: Path, reference: dict[str, Any],
                                                                        tmp_path: Path) -> None:
    outcome, backend, _ = _run(model_dir, tmp_path, _renderer(model_dir))
    steps = len(reference)
    assert steps > 64 and backend.sent == reference
    checks = outcome.manifest["invocations"][-1]["prompt_checks"]
    due = len([n for n in range(1, steps + 1) if n <= 4 or n % 64 == 0])
    for path in ("rendering", "tokenisation"):
        assert checks[path] == {"fast": steps, "checked": due, "reference": 0}
    assert (checks["every"], checks["mismatches"], checks["first_mismatch"]) == (64, 0, None)
    assert outcome.manifest["settings"]["verify_prompts"] == "64"
    assert outcome.manifest["sources"]["verify_prompts"] == "default"
    outcome, _, _ = _run(model_dir, tmp_path / "every10", _renderer(model_dir), verify_prompts="10")
    checks = outcome.manifest["invocations"][-1]["prompt_checks"]
    assert checks["rendering"]["checked"] == 4 + steps // 10


def test_the_options_on_the_command_line() -> None:
    from click.testing import CliRunner

    from wtb_local.cli import cli

    help_text = " ".join(CliRunner().invoke(cli, ["run", "--help"]).output.split())
    assert "--verify-prompts TEXT" in help_text and "[env var: WTB_VERIFY_PROMPTS; default: 64]" in help_text
    assert "[env var: WTB_ON_PROMPT_MISMATCH; default: reference]" in help_text
    done = CliRunner().invoke(cli, ["run", "--model", "m", "--verify-prompts", "0"])
    assert done.exit_code == 2
    assert done.output.splitlines()[-1] == (
        "Error: Invalid value for '--verify-prompts' (env var: 'WTB_VERIFY_PROMPTS'): '0' is not a positive number "
        "or all (0 is refused: the fast paths are always checked at least on their first 4 prompts)")
    done = CliRunner().invoke(cli, ["run", "--model", "m", "--on-prompt-mismatch", "ignore"])
    assert done.exit_code == 2 and "'ignore' is not one of 'reference', 'stop'" in done.output


def test_a_run_without_fast_paths_says_the_options_change_nothing(tmp_path: Path) -> None:
    from tests.run.conftest import invoke, scripted_args

    done = invoke(scripted_args(tmp_path, "--verify-prompts", "all"))
    assert done.exit_code == 0, done.output
    assert "warning: --verify-prompts changes nothing: the backend renders no prompts" in done.stderr
    manifest = _manifest(tmp_path)
    assert (manifest["settings"]["verify_prompts"], manifest["settings"]["on_prompt_mismatch"]) == (None, None)
    assert manifest["sources"]["verify_prompts"] == "the backend renders no prompts"
    assert "prompt_checks" not in manifest["invocations"][-1]


@pytest.mark.slow
@pytest.mark.timeout(600)  # render worker processes on a tiny model, a run each: minutes on 2 shared cores
def test_a_mismatch_while_the_run_is_prepared_is_recorded_and_holds_for_render_workers(
        model_dir: Path, reference: dict[str, Any], tmp_path: Path) -> None:
    """The thinking probe's prompt (prepare, before any step) rendered wrong by the fast path: recorded with
    no step, and the workers started afterwards render every prompt by apply_chat_template."""
    from wtb_local.run.setup.thinking import generation_prompt

    probe = generation_prompt(_renderer(model_dir))
    renderer = _renderer(model_dir, SkewedRenderer, skew_rendering=text_sha256(probe))
    outcome, backend, err = _run(model_dir, tmp_path, renderer, render_workers="2")
    assert backend.sent == reference
    checks = outcome.manifest["invocations"][-1]["prompt_checks"]
    first = checks["first_mismatch"]
    assert (first["session"], first["task"], first["step"], first["path"], first["where"], first["position"]) == \
        (None, None, None, "rendering", "the event loop", CHARACTER)
    assert checks["mismatches"] == 1
    assert checks["rendering"] == {"fast": 0, "checked": 0, "reference": len(reference)}
    assert checks["tokenisation"]["fast"] == len(reference)
    said, *notes = err.splitlines()
    assert said == (
        "warning: prompt check: the fast rendering of a prompt rendered while the run was prepared (the event "
        f"loop) differed from apply_chat_template at character {CHARACTER}: that prompt and all later ones use "
        "apply_chat_template (manifest: prompt_checks)")
    assert sorted(notes) == [f"note: render worker {i}: fast rendering off: a mismatch elsewhere in the run"
                             for i in (0, 1)]
    assert sorted(checks["notes"]) == [note.removeprefix("note: ") for note in sorted(notes)]
    error, backend, _ = _run(model_dir, tmp_path / "stop", _renderer(model_dir, SkewedRenderer,
                                                                     skew_rendering=text_sha256(probe)),
                             on_prompt_mismatch="stop")
    assert isinstance(error, RunError) and backend.sent == {}
    assert str(error).startswith("prompt check: the fast rendering of a prompt rendered while the run was prepared")
    assert _manifest(tmp_path / "stop")["status"] == "failed"
