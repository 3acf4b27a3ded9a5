"""A generation prompt that opens a reasoning block makes the parser read an unclosed block as reasoning,
so a reply cut at the token limit mid-thought is not taken as a final text answer."""

from __future__ import annotations

from typing import Any

from wtb_local.benchmark.dataset import load_dataset
from wtb_local.benchmark.evaluator.episode import session_episodes
from wtb_local.formats.parsers.prefill import step_parser
from wtb_local.run.setup.parser_choice import choose_parser, prefills_reasoning


class _Renderer:
    def __init__(self, generation_prompt: str) -> None:
        self.generation_prompt = generation_prompt
        self.template = None

    def render_text(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        return "<|im_start|>user\nHi<|im_end|>\n" + self.generation_prompt


def test_prefilled_think_tag_is_detected() -> None:
    assert prefills_reasoning(_Renderer("<|im_start|>assistant\n<think>\n"))
    assert not prefills_reasoning(_Renderer("<|im_start|>assistant\n"))
    assert not prefills_reasoning(None)


def test_cut_mid_thought_is_an_error_not_a_final_answer() -> None:
    model = "Qwen/Qwen3-4B-Thinking-2507"
    thinking, options = choose_parser("hermes", model=model, renderer=_Renderer("<|im_start|>assistant\n<think>\n"))
    assert options == {"thinking": "per-step"}  # recorded in the manifest, reused by replays
    thinking = step_parser(thinking, prefills_reasoning(_Renderer("<|im_start|>assistant\n<think>\n")))
    plain, _ = choose_parser("hermes", model=model, renderer=_Renderer("<|im_start|>assistant\n"))
    cut = "Let me think about which tool to call first, the user wants"
    assert thinking.parse(cut, finish_reason="length").content in (None, "")
    assert plain.parse(cut, finish_reason="length").content == cut

    # Through the loop: a chat task (its gold step is a final text answer) is not accepted on that cut.
    session = load_dataset("sample")[0]
    chat = next(i for i, t in enumerate(session.english_task_types) if t.value == "Chat")
    episode = session_episodes(session)[chat]
    parsed = thinking.parse(cut, finish_reason="length")
    episode.accept({"content": parsed.content, "reasoning_content": parsed.reasoning, "tool_calls": None})
    assert episode.result()["action_name_label"] == "error"


def test_replay_reuses_the_recorded_parser_options(tmp_path) -> None:
    import json

    import pytest

    from wtb_local.contract.recorded import ReplayError, recorded_parser

    result_file = tmp_path / "result" / "m" / "Wild-Tool-Bench_result.jsonl"
    result_file.parent.mkdir(parents=True)
    result_file.write_text("")
    (tmp_path / "manifest.json").write_text(json.dumps({"parser": "hermes", "parser_options": {"thinking": True}}))
    assert recorded_parser(result_file) == ("hermes", {"thinking": True})
    (tmp_path / "manifest.json").unlink()
    assert recorded_parser(result_file) == (None, {})  # no manifest: the replay goes by its flags
    (tmp_path / "manifest.json").write_text("not json")  # a damaged one is refused, never read as none
    with pytest.raises(ReplayError, match=r"manifest\.json: unreadable run manifest \(Expecting value"):
        recorded_parser(result_file)


def test_replay_with_another_parser_keeps_the_prompt_options(tmp_path) -> None:
    """`run --backend replay --parser X` and `parsers compare` read the completions with the recorded
    options that describe the prompt (thinking); the recorded parser keeps all its options."""
    import json

    from wtb_local.contract.recorded import replay_parser
    from wtb_local.engines import backend_class

    run = tmp_path / "run"
    result_file = run / "result" / "m" / "Wild-Tool-Bench_result.jsonl"
    result_file.parent.mkdir(parents=True)
    result_file.write_text(json.dumps({"id": "wild_tool_bench_1", "result": [{"inference_log": {
        "step_0": {"inference_output": {"raw": "hi", "finish_reason": "stop"}}}}]}) + "\n")
    (run / "manifest.json").write_text(json.dumps({"parser": "hermes",
                                                   "parser_options": {"thinking": True, "strict": 1}}))
    assert replay_parser(result_file) == ("hermes", {"thinking": True, "strict": 1})
    assert replay_parser(result_file, "hermes") == ("hermes", {"thinking": True, "strict": 1})
    assert replay_parser(result_file, "qwen3_coder") == ("qwen3_coder", {"thinking": True})
    assert replay_parser(result_file, "qwen3_coder", {"thinking": False}) == ("qwen3_coder", {"thinking": False})
    values = {"replay": str(run), "parser": "qwen3_coder", "parser_options": {}, "model": None,
              "model_name": None}
    backend_class("replay").resolve(values, {"dataset": "given (--dataset)"}, None)
    assert (values["parser"], values["parser_options"]) == ("qwen3_coder", {"thinking": True})
