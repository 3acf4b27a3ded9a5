"""`--served-model-name` (vLLM's flag name, `WTB_SERVED_MODEL_NAME`): the name the server backends send in
requests, while `--model` keeps naming the checkpoint (its tokenizer, template and generation_config). A
loopback server that, like vLLM, lists only its served name and refuses requests for any other name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.loopback import JSONHandler, serving
from tests.run.conftest import invoke

SERVED = "wtb-served"
REPLY = "Sure, I can help with that."


@contextmanager
def named_server() -> Iterator[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    """Serves SERVED only: a request naming another model gets vLLM's 404."""
    bodies: list[tuple[str, dict[str, Any]]] = []

    class Handler(JSONHandler):
        def do_GET(self) -> None:
            self.send_json({"object": "list", "data": [{"id": SERVED, "max_model_len": 32768}]})

        def do_POST(self) -> None:
            body = self.read_json()
            bodies.append((self.path, body))
            if body.get("model") != SERVED:
                self.send_json({"error": {"message": f"The model `{body.get('model')}` does not exist."}}, 404)
                return
            usage = {"prompt_tokens": 10, "completion_tokens": 8}
            if self.path.endswith("/chat/completions"):
                choice = {"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}
            else:
                choice = {"index": 0, "text": REPLY, "finish_reason": "stop"}
            self.send_json({"choices": [choice], "usage": usage})

    with serving(Handler) as httpd:
        yield httpd.base_url, bodies


def _args(model: Path, backend: str, base_url: str, out: Path, *extra: str) -> list[str]:
    return ["--model", str(model), "--backend", backend, "--base-url", base_url, "--dataset", "sample",
            "--limit", "1", "--out", str(out), "--progress", "none", *extra]


@pytest.mark.parametrize("backend", ["openai", "openai-chat"])
def test_requests_name_the_served_model_and_model_names_the_checkpoint(qwen_tiny_dir: Path, tmp_path: Path,
                                                                        backend: str) -> None:
    with named_server() as (base_url, bodies):
        result = invoke(_args(qwen_tiny_dir, backend, base_url, tmp_path / "run", "--served-model-name", SERVED))
    assert result.exit_code == 0, result.output
    assert bodies and {body["model"] for _, body in bodies} == {SERVED}
    endpoint = "/v1/completions" if backend == "openai" else "/v1/chat/completions"
    assert {path for path, _ in bodies} == {endpoint}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["model"] == str(qwen_tiny_dir)
    assert manifest["settings"]["served_model_name"] == SERVED
    assert manifest["sources"]["served_model_name"] == "given (--served-model-name)"
    assert manifest["backend"]["settings"]["served_model_name"] == SERVED
    assert manifest["backend"]["server_models"] == [SERVED]
    if backend == "openai":
        # sampling resolved from the checkpoint's generation_config (read from --model), the prompt rendered
        # with its tokenizer: token ids, not the name
        first = bodies[0][1]
        assert isinstance(first["prompt"], list) and all(isinstance(i, int) for i in first["prompt"])
        assert manifest["backend"]["max_model_len"] == 32768  # the served name's entry in the listing


def test_the_environment_twin_names_the_served_model(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    with named_server() as (base_url, bodies):
        result = invoke(_args(qwen_tiny_dir, "openai", base_url, tmp_path / "run"),
                        env={"WTB_SERVED_MODEL_NAME": SERVED})
    assert result.exit_code == 0, result.output
    assert {body["model"] for _, body in bodies} == {SERVED}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["sources"]["served_model_name"] == "given (WTB_SERVED_MODEL_NAME)"


@pytest.mark.parametrize(("extra", "flag", "named"), [((), "--model", None), (("--served-model-name", "other"),
                                                                             "--served-model-name", "other")])
def test_a_name_the_server_does_not_serve_stops_the_run_in_one_line(qwen_tiny_dir: Path, tmp_path: Path,
                                                                     extra: tuple[str, ...], flag: str,
                                                                     named: str | None) -> None:
    with named_server() as (base_url, bodies):
        result = invoke(_args(qwen_tiny_dir, "openai", base_url, tmp_path / "run", *extra))
    assert result.exit_code != 0
    assert bodies == []  # nothing was sent: no step of the run became an error
    name = named or str(qwen_tiny_dir)
    expected = (f"OpenAI server at {base_url} serves {SERVED}, not {name!r} ({flag}); pass the served name as "
                "--served-model-name (--model names the checkpoint)")
    assert expected in result.stderr
    assert [line for line in result.stderr.splitlines() if expected in line] != []


def test_a_backend_that_is_not_a_server_names_the_option_as_unused(qwen_tiny_dir: Path, tmp_path: Path) -> None:
    result = invoke(["--model", str(qwen_tiny_dir), "--backend", "oracle", "--dataset", "sample", "--limit", "1",
                     "--out", str(tmp_path / "run"), "--progress", "none", "--served-model-name", SERVED])
    assert result.exit_code == 0, result.output
    assert ("warning: the oracle backend is not a server: --served-model-name wtb-served change nothing"
            in result.stderr.splitlines())
