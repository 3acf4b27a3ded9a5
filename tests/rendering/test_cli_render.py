"""`python -m wtb_local render`: the exact prompt on stdout, the template choice on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.rendering.conftest import real_templates
from wtb_local.benchmark.dataset import load_dataset
from wtb_local.benchmark.evaluator.episode import session_episodes
from wtb_local.cli import cli
from wtb_local.formats.rendering.renderer import PromptRenderer

QWEN = "Qwen/Qwen2.5-7B-Instruct"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    from tests.helpers.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"), real_templates()[QWEN]["chat_template"])


def _multi_step_task() -> tuple[str, int, str]:
    """(session id, task, name of the first gold call) for a task whose gold path starts with a tool step."""
    for session in load_dataset("sample", quiet=True):
        for episode in session_episodes(session):
            reply = episode.gold_reply()
            if reply["tool_calls"] and len(episode.gold_path()) >= 2:
                return session.id, episode.task_idx, reply["tool_calls"][0]["function"]["name"]
    raise AssertionError("the sample has no multi-step task")


def _run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["render", *args], env=env, catch_exceptions=False)


def test_prints_the_exact_prompt_of_step_zero(model_dir: Path) -> None:
    result = _run("--model", str(model_dir))
    assert result.exit_code == 0, result.stderr
    session = load_dataset("sample", quiet=True)[0]
    messages, tools = session_episodes(session)[0].request()
    expected = PromptRenderer.from_pretrained(str(model_dir)).render(messages, tools)
    assert result.stdout == expected.text
    assert "template: tokenizer sha256=" in result.stderr
    assert "adaptation: arguments=dict,content=empty,ids=keep" in result.stderr
    assert f"prompt tokens: {len(expected.token_ids)}" in result.stderr


def test_later_steps_replay_the_gold_replies(model_dir: Path) -> None:
    session_id, task, name = _multi_step_task()
    step0 = _run("--model", str(model_dir), "--session", session_id, "--task", str(task))
    step1 = _run("--model", str(model_dir), "--session", session_id, "--task", str(task), "--step", "1")
    assert step0.exit_code == step1.exit_code == 0
    assert step1.stdout.startswith(step0.stdout[: -len("<|im_start|>assistant\n")])
    assert f'<tool_call>\n{{"name": "{name}"' in step1.stdout[len(step0.stdout) - 30:]
    assert "<tool_response>" in step1.stdout[len(step0.stdout) - 30:]


def test_options_come_from_the_environment(model_dir: Path) -> None:
    session_id, task, _ = _multi_step_task()
    by_env = _run(env={"WTB_MODEL": str(model_dir), "WTB_SESSION": session_id, "WTB_TASK": str(task),
                       "WTB_STEP": "1", "WTB_CHAT_TEMPLATE": "hammer2_1"})
    by_flag = _run("--model", str(model_dir), "--session", session_id, "--task", str(task), "--step", "1",
                   "--chat-template", "hammer2_1")
    assert by_env.exit_code == 0, by_env.stderr
    assert by_env.stdout == by_flag.stdout
    assert "template: override:hammer2_1" in by_env.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--task", "99"], "--task 99: session wild_tool_bench_"),
    (["--step", "50"], "--step 50: task 0 of wild_tool_bench_"),
    (["--session", "nope"], "--session nope: no such session"),
    (["--template-kwarg", "novalue"], "--template-kwarg 'novalue': expected KEY=VALUE"),
    (["--no-thinking"], "has no thinking switch"),
    (["--chat-template", "nope"], "--chat-template 'nope': neither a shipped override"),
])
def test_bad_options_give_one_line_errors(model_dir: Path, args: list[str], message: str) -> None:
    result = _run("--model", str(model_dir), *args)
    assert result.exit_code == 1
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and result.stdout == ""


def test_missing_model_directory_is_a_clear_error(tmp_path: Path) -> None:
    result = _run("--model", str(tmp_path / "absent"), env={"HF_HUB_OFFLINE": "1"})
    assert result.exit_code == 1
    assert f"{tmp_path / 'absent'}" in result.stderr


def test_a_shipped_template_of_another_family_is_said_with_the_count(model_dir: Path) -> None:
    """A Qwen tokenizer rendering the Llama 3 template: the count is this tokenizer's, said in one line; the
    model's own template (or an override written for it) says nothing."""
    result = _run("--model", str(model_dir), "--chat-template", "llama3_json")
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[-2].startswith("prompt tokens: ")
    assert lines[-1] == (f"warning: --chat-template llama3_json is written for other models (ids matching "
                         r"meta-llama/llama-3\.[123]-[0-9]+b-instruct, llama-3\.[123]-[0-9]+b-instruct$); the prompt "
                         f"is tokenised with {model_dir}'s tokenizer, so the token ids and the count are not what "
                         "those models get")
    own = _run("--model", str(model_dir))
    assert "warning" not in own.stderr


def test_a_hub_model_offline_says_render_needs_only_its_tokenizer(tmp_path: Path) -> None:
    result = _run("--model", "google/gemma-4-9b-it", env={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path)})
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: google/gemma-4-9b-it is not in the hub cache")
    assert lines[0].endswith("(render needs only its tokenizer files: tokenizer.json, tokenizer_config.json and "
                             "the chat template, not its weights)")
