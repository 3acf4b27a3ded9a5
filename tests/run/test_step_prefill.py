"""The reasoning pre-fill is decided per step, from that step's own generation prompt.

DeepSeek-R1-Distill's template pre-fills `<think>\n` after a user turn but not after tool results: a
completion after tool results that answers directly (or calls a tool) without any `<think>` is content
(or a call), while an unclosed block after a user turn is still reasoning. A replay (with or without
`--parser`) parses every step the way the recorded run did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from wtb_local.contract.schema import Completion, GenerationRequest, SamplingConfig
from wtb_local.engines.base import Backend
from wtb_local.run.loop.steps import StepDriver
from wtb_local.run.setup.parser_choice import choose_parser
from wtb_local.run.setup.tokenizer import load_renderer

pytest.importorskip("transformers", reason="transformers is not installed (pip install -e .[hf])")

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "rendering" / "chat_templates.json"
MODEL = "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
USER = [{"role": "user", "content": "What is the weather in Paris?"}]
AFTER_TOOL = [*USER,
              {"role": "assistant", "content": "", "tool_calls": [{"id": "call_0", "type": "function", "function": {
                  "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
              {"role": "tool", "tool_call_id": "call_0", "content": "sunny, 21 C"}]
# R1's native call text, written out by hand (not by the parser under test)
CALL = ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
        "{\"city\": \"Lyon\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>")


@pytest.fixture(scope="module")
def r1_distill(tmp_path_factory) -> Path:
    from tests.helpers import build_tiny_model

    template = json.loads(TEMPLATES.read_text(encoding="utf-8"))[MODEL]["chat_template"]
    return build_tiny_model(tmp_path_factory.mktemp("models") / MODEL, template,
                            bos_token="<｜begin▁of▁sentence｜>", eos_token="<｜end▁of▁sentence｜>")


class _Fixed(Backend):
    name = "fixed"

    async def generate(self, request: GenerationRequest) -> Completion:
        raise AssertionError("not called")


class _Episode:
    session_id, task_idx, step = "s", 0, 0

    def annotate(self, step: int, fields: dict[str, Any]) -> None:
        pass

    def accept(self, reply: dict[str, Any], error_reason: str | None = None,
               extra: dict[str, Any] | None = None, **_counts: Any) -> None:
        self.reply, self.error, self.extra = reply, error_reason, extra


def _step(driver: StepDriver, messages: list[dict[str, Any]], text: str, finish: str = "stop") -> _Episode:
    rendered = driver.renderer.render(messages, TOOLS)
    request = GenerationRequest(request_id="s/0/0", session_id="s", task_idx=0, step=0, messages=messages,
                                tools=TOOLS, sampling=SamplingConfig(), prompt=rendered.text)
    episode = _Episode()
    driver.accept(episode, request, Completion(request_id="s/0/0", text=text, finish_reason=finish))
    return episode


def test_each_step_is_parsed_by_its_own_prompt(r1_distill: Path) -> None:
    renderer = load_renderer(str(r1_distill))
    parser, options = choose_parser(None, model=str(r1_distill), renderer=renderer)
    assert (parser.name, options) == ("deepseek_r1", {"thinking": "per-step"})
    assert renderer.render_text(USER, TOOLS).endswith("<｜Assistant｜><think>\n")
    assert not renderer.render_text(AFTER_TOOL, TOOLS).rstrip().endswith("<think>")
    driver = StepDriver(_Fixed(), sampling=SamplingConfig(), parser=parser, renderer=renderer)

    answer = _step(driver, AFTER_TOOL, "It is sunny in Paris, 21 C.")
    assert (answer.reply["content"], answer.reply["reasoning_content"], answer.reply["tool_calls"],
            answer.error) == ("It is sunny in Paris, 21 C.", None, None, None)
    assert answer.extra["prefilled_reasoning"] is False

    call = _step(driver, AFTER_TOOL, CALL)
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in call.reply["tool_calls"]] \
        == [("get_weather", {"city": "Lyon"})]
    assert (call.reply["reasoning_content"], call.error) == (None, None)

    # the model opens and closes its own block after tool results: still split off
    own = _step(driver, AFTER_TOOL, "<think>\nSunny.\n</think>\n\nSunny in Paris.")
    assert (own.reply["reasoning_content"], own.reply["content"]) == ("Sunny.", "Sunny in Paris.")

    # after a user turn the prompt opened the block: an unclosed completion is reasoning, not an answer
    cut = _step(driver, USER, "The user wants the weather, so I should call", finish="length")
    assert (cut.reply["reasoning_content"], cut.reply["content"]) == (
        "The user wants the weather, so I should call", None)
    assert cut.extra["prefilled_reasoning"] is True
    closed = _step(driver, USER, "Check Paris.\n</think>\n\n" + CALL)
    assert closed.reply["reasoning_content"] == "Check Paris."
    assert [c["function"]["name"] for c in closed.reply["tool_calls"]] == ["get_weather"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wtb_local", "run", *args, "--dataset", "sample", "--limit", "3",
                           "--progress", "none"], check=False, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _labels(run: Path) -> list[list[str]]:
    rows = [json.loads(line) for line in next(run.glob("result/*/*.jsonl")).read_text("utf-8").splitlines()]
    return [[t["action_name_label"] for t in row["result"]] for row in rows]


def test_replay_parses_each_step_as_recorded_with_or_without_parser(r1_distill: Path, tmp_path: Path) -> None:
    recorded = tmp_path / "oracle"
    done = _cli("--backend", "oracle", "--model", str(r1_distill), "--model-name", "r1", "--out", str(recorded))
    assert done.returncode == 0, done.stderr
    manifest = json.loads((recorded / "manifest.json").read_text("utf-8"))
    assert (manifest["parser"], manifest["parser_options"]) == ("deepseek_r1", {"thinking": "per-step"})
    assert (manifest["backend"]["template_cuts"], manifest["backend"]["format_fallbacks"]) == (
        manifest["backend"]["template_cuts"], 0)
    steps = [step["inference_output"] for row in
             (json.loads(line) for line in (recorded / "result" / "r1" / "Wild-Tool-Bench_result.jsonl")
              .read_text("utf-8").splitlines())
             for task in row["result"] for key, step in task["inference_log"].items() if key.startswith("step_")]
    assert {s["prefilled_reasoning"] for s in steps} == {True, False}  # after user turns / after tool results
    labels = _labels(recorded)
    assert {label for row in labels for label in row} == {"correct"}

    for name, extra in (("plain", ()), ("named", ("--parser", "deepseek_r1"))):
        out = tmp_path / name
        done = _cli("--backend", "replay", "--replay", str(recorded), "--model-name", "r1", "--out", str(out), *extra)
        assert done.returncode == 0, done.stderr
        replayed = json.loads((out / "manifest.json").read_text("utf-8"))
        assert (replayed["parser"], replayed["parser_options"]) == ("deepseek_r1", {"thinking": "per-step"}), name
        assert _labels(out) == labels, name
