"""Set-up decides nothing silently (docs/reliability.md, "Set-up decides nothing silently"): a value it
cannot read is a fallback recorded in the manifest and said at start, or a stop with one line. Real runs of
the oracle backend over a tiny model directory's tokenizer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.run.conftest import chat_template, invoke


def _args(model: Path, out: Path) -> list[str]:
    return ["--backend", "oracle", "--model", str(model), "--dataset", "sample", "--limit", "1", "--out", str(out),
            "--progress", "none"]


def _tokenizer_config(model: Path) -> dict:
    return json.loads((model / "tokenizer_config.json").read_text(encoding="utf-8"))


@pytest.fixture
def model_copy(qwen_tiny_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "model"
    shutil.copytree(qwen_tiny_dir, copy)
    return copy


def _set_template(model: Path, template: str | None) -> None:
    config = _tokenizer_config(model)
    config.pop("chat_template", None)
    if template is not None:
        config["chat_template"] = template
    (model / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    (model / "chat_template.jinja").unlink(missing_ok=True)
    if template is not None:
        (model / "chat_template.jinja").write_text(template, encoding="utf-8")


def test_an_unreadable_generation_prompt_decides_the_prefill_per_step_said_and_recorded(
        model_copy: Path, tmp_path: Path) -> None:
    # the template refuses the one-message greeting set-up renders to read the generation prompt, and
    # nothing else: the run's own prompts render
    refusing = ("{%- if messages | length == 1 and messages[0]['content'] == 'Hi' %}{{ raise_exception('no "
                "greetings') }}{%- endif %}" + chat_template("Qwen/Qwen2.5-7B-Instruct"))
    _set_template(model_copy, refusing)
    out = tmp_path / "run"
    done = invoke(_args(model_copy, out))
    assert done.exit_code == 0, done.stderr
    reason = ("per step: the generation prompt could not be rendered to decide the reasoning pre-fill once "
              "(TemplateError: no greetings); each step's own prompt decides it")
    assert f"warning: parser options {reason}" in done.stderr.splitlines()
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["parser_options"] == {"thinking": "per-step"}
    assert manifest["sources"]["parser_options"] == reason


def test_a_local_tokenizer_without_a_chat_template_is_said_and_recorded(model_copy: Path, tmp_path: Path) -> None:
    _set_template(model_copy, None)
    out = tmp_path / "run"
    done = invoke([*_args(model_copy, out), "--parser", "hermes"])
    assert done.exit_code == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith(f"warning: --model {model_copy}: ")]
    assert len(warnings) == 1 and warnings[0].endswith("; replies written by the parser's format")
    assert "no chat template (TemplateError: " in warnings[0]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert warnings[0] == f"warning: --model {model_copy}: {manifest['template_note']}"


def test_a_local_tokenizer_that_fails_to_load_stops_the_run_in_one_line(model_copy: Path, tmp_path: Path) -> None:
    (model_copy / "tokenizer_config.json").write_text("{not json", encoding="utf-8")
    out = tmp_path / "run"
    done = invoke([*_args(model_copy, out), "--parser", "hermes"])
    assert done.exit_code == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"Error: --model {model_copy}: loading its tokenizer from disk failed (")
    assert line.endswith("); fix it, or pass --parser without --model to write replies in the parser's format")
    assert not (out / "manifest.json").exists()
