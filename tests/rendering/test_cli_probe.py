"""End to end, in a subprocess: a template whose past calls read back wrong stops `render` and `run` with
one line naming the problem and `--chat-template`; the named override then serves it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.rendering.conftest import real_templates

REPO = Path(__file__).resolve().parents[2]
GARBLING = "meta-llama/Llama-4-Scout-17B-16E-Instruct::vllm"  # quotes every history argument
PROBLEM = ('history turn 2 (probe_weather, probe_weather, probe_convert) reads back with parser pythonic as '
           'probe_weather("city=\\"Zanzibar-Q7\\", days=\\"4817\\"")')


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.helpers import build_tiny_model

    # a directory name no override serves, so nothing rescues the template silently
    return build_tiny_model(tmp_path_factory.mktemp("cli-probe") / "acme" / "tool-model",
                            real_templates()[GARBLING]["chat_template"], bos_token="<|begin_of_text|>",
                            eos_token="<|eot|>")


def _cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run([sys.executable, "-m", "wtb_local", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=300, check=False)


def _one_line_refusal(result: subprocess.CompletedProcess[str], model_dir: Path) -> None:
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Error: chat template tokenizer of {model_dir} fails the probe (no override in "
                               "chat_templates/ serves it): tokenizer [arguments=dict,content=empty,ids=keep]: ")
    assert PROBLEM in lines[0]
    assert lines[0].endswith("; pass --chat-template NAME|PATH")


def test_render_refuses_and_the_override_serves(model_dir: Path, tmp_path: Path) -> None:
    _one_line_refusal(_cli("render", "--model", str(model_dir), cwd=tmp_path), model_dir)
    fixed = _cli("render", "--model", str(model_dir), cwd=tmp_path, WTB_CHAT_TEMPLATE="llama4_pythonic")
    assert fixed.returncode == 0, fixed.stderr
    assert "template: override:llama4_pythonic sha256=" in fixed.stderr
    assert fixed.stdout.endswith("<|header_start|>assistant<|header_end|>\n\n")


def test_run_refuses_before_loading_the_model(model_dir: Path, tmp_path: Path) -> None:
    result = _cli("run", "--model", str(model_dir), "--backend", "transformers", "--dataset", "sample",
                  "--limit", "1", "--out", str(tmp_path / "run"), "--progress", "none", cwd=tmp_path)
    _one_line_refusal(result, model_dir)
    assert not (tmp_path / "run" / "result").exists()
