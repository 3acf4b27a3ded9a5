"""Recorded runs for the `explain` tests, made once per session by the real `run`, `rescore` and replay
commands: an oracle run and its replay through another parser (a parser-only difference), the scripted
vectors run and its lenient re-scoring (a checker-only difference), and runs on a loopback server whose
replies depend on the prompt and the request seed (three seeds of one run, and runs with other
templates)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.run.conftest import chat_template, invoke, qwen_tiny_dir, scripted_args  # noqa: F401 - a fixture
from tests.run.fake_openai import fake_openai_server

# Two edits of the tiny model's template: another default system line, which the dataset's own system
# message replaces (the same prompts), and another tools header (other prompts).
SYSTEM_LINE = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
TOOLS_LINE = "You may call one or more functions to assist with the user query."


def _run(args: list[str]) -> None:
    done = invoke([*args, "--progress", "none"])
    assert done.exit_code == 0, done.output


def cli(*args: str) -> object:
    from wtb_local.cli import cli as group

    return CliRunner().invoke(group, list(args), catch_exceptions=False)


@pytest.fixture(scope="session")
def parser_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An oracle run (Qwen3's Hermes calls) and its replay through the pythonic parser."""
    root = tmp_path_factory.mktemp("explain-parser")
    _run(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--out", str(root / "oracle")])
    _run(["--backend", "replay", "--replay", str(root / "oracle"), "--parser", "pythonic",
          "--out", str(root / "pythonic")])
    return root / "oracle", root / "pythonic"


@pytest.fixture(scope="session")
def paper_run(parser_runs: tuple[Path, Path]) -> Path:
    """The oracle run of `parser_runs` again under `--protocol paper` (the harness's conversation)."""
    out = parser_runs[0].parent / "paper"
    _run(["--model", "Qwen/Qwen3-8B", "--backend", "oracle", "--dataset", "sample", "--protocol", "paper",
          "--out", str(out)])
    return out


@pytest.fixture(scope="session")
def checker_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The scripted vectors run (strict checker) and its lenient re-scoring."""
    root = tmp_path_factory.mktemp("explain-checker")
    _run(scripted_args(root / "scripted")[:-2])
    done = cli("rescore", str(root / "scripted"), "--checker", "lenient")
    assert done.exit_code == 0, done.output
    return root / "scripted", root / "scripted" / "score-lenient"


@pytest.fixture(scope="session")
def seed_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """Three seeds of one sampled run (`--repeats 3`), a run whose template renders the same prompts and one
    whose template renders other prompts, on a server whose replies depend on the prompt and the seed (the
    tiny Qwen2.5-template model's tokenizer renders them)."""
    tiny = request.getfixturevalue("qwen_tiny_dir")
    root = tmp_path_factory.mktemp("explain-seeds")
    template = chat_template("Qwen/Qwen2.5-7B-Instruct")
    assert SYSTEM_LINE in template and TOOLS_LINE in template
    same, other = root / "same.jinja", root / "other.jinja"
    same.write_text(template.replace(SYSTEM_LINE, "You are a helpful assistant."), encoding="utf-8")
    other.write_text(template.replace(TOOLS_LINE, "Call functions to help the user."), encoding="utf-8")
    with fake_openai_server(str(tiny), vary_by_seed=True) as server:
        base = ["--model", str(tiny), "--model-name", "tiny", "--backend", "openai", "--base-url",
                server.base_url, "--dataset", "sample", "--temperature", "0.7"]
        _run([*base, "--repeats", "3", "--out", str(root / "seeds")])
        _run([*base, "--chat-template", str(same), "--out", str(root / "same-prompts")])
        _run([*base, "--chat-template", str(other), "--out", str(root / "other-prompts")])
    return root / "seeds", root / "same-prompts", root / "other-prompts"
