"""The classification of docs/reliability.md: how a recorded step ended (model outcomes, and which of them
are failed requests), which fault an engine's exception is, which server answers are the step's and which
the machine's, and the one stop line."""

from __future__ import annotations

import pytest

from wtb_local.contract.faults import (
    ENDINGS,
    KINDS,
    BackendError,
    ConnectionFailed,
    DeviceError,
    EngineDied,
    FaultLog,
    OutOfMemory,
    RequestRejected,
    ServerError,
    Timeout,
    classify,
    context_overflow,
    failed_request,
    failed_requests,
    step_ending,
    stop_line,
)
from wtb_local.engines.openai_server import StepError, http_fault

# One recorded step output per ending, shaped as the runner records them (runner/loop/steps.py).
RECORDED = {
    "reply": {"content": "It is sunny.", "tool_calls": None, "current_action_name_label": "correct",
              "raw": "It is sunny.", "finish_reason": "stop"},
    "length cut": {"content": "", "tool_calls": None, "current_action_name_label": "error",
                   "error_reason": "tool_calls and content are None or empty", "raw": "<think>long",
                   "finish_reason": "length", "reasoning_content": "long"},
    "parse failure": {"content": "", "tool_calls": None, "current_action_name_label": "error",
                      "error_reason": "parse error: tool call block 1: not JSON",
                      "raw": "<tool_call>\nnot json\n</tool_call>", "finish_reason": "stop",
                      "parse_errors": ["tool call block 1: not JSON"]},
    "render failed": {"content": "", "tool_calls": None, "current_action_name_label": "error",
                      "error_reason": "render failed: TemplateError: Conversation roles must alternate"},
    "prompt too long": {"content": "", "tool_calls": None, "current_action_name_label": "error",
                        "error_reason": "prompt too long: 9000 tokens > max_model_len 8192", "raw": None,
                        "finish_reason": "error"},
    "not served": {"content": "", "tool_calls": None, "current_action_name_label": "error",
                   "error_reason": "malformed reply from /chat/completions: tool_calls[0] has no function name",
                   "raw": None, "finish_reason": "error"},
}


def test_every_ending_is_read_from_its_recorded_step() -> None:
    assert set(RECORDED) == set(ENDINGS)
    assert {name: step_ending(output) for name, output in RECORDED.items()} == {name: name for name in ENDINGS}
    # a step an older run recorded for a request the driver never got
    assert step_ending({"error_reason": "no completion"}) == "render failed"
    # the wrong answer of a reply-level backend (scripted: no finish_reason) is a reply
    assert step_ending({"error_reason": "action name not in candidate_answer_function_list"}) == "reply"


def test_failed_requests_are_the_steps_that_got_no_reply_and_one_count_reads_them() -> None:
    assert sorted(name for name, output in RECORDED.items() if failed_request(output)) == [
        "not served", "prompt too long", "render failed"]
    row = {"id": "s", "result": [
        {"inference_log": {"task_idx": 0, "begin_of_current_task": {}, **{
            f"step_{i}": {"inference_output": output} for i, output in enumerate(RECORDED.values())}}},
        {"inference_log": {"step_0": {"inference_output": {
            "finish_reason": "error", "error_reason": "prompt too long: 12000 tokens > max_model_len 8192"}}}}]}
    examples: dict[str, str] = {}
    assert failed_requests([row, {"id": "crashed", "result": "error string"}], examples) == {
        "render failed: TemplateError: Conversation roles must alternate": 1,
        "prompt too long: N tokens > max_model_len N": 2,
        "malformed reply from /chat/completions: tool_calls[N] has no function name": 1}
    assert examples["prompt too long: N tokens > max_model_len N"] == (
        "prompt too long: 9000 tokens > max_model_len 8192")


class EngineDeadError(Exception):  # the names vLLM and torch give their exceptions
    pass


class AcceleratorError(RuntimeError):
    pass


def test_an_engines_exception_is_sorted_by_its_class_and_message() -> None:
    import torch

    cases = [
        (EngineDeadError("EngineCore encountered an issue."), EngineDied,
         "EngineDeadError: EngineCore encountered an issue."),
        (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), OutOfMemory,
         "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
        (MemoryError(), OutOfMemory, "MemoryError"),
        (RuntimeError("CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be"),
         DeviceError, "RuntimeError: CUDA error: an illegal memory access was encountered CUDA kernel errors might be"),
        (AcceleratorError("device lost"), DeviceError, "AcceleratorError: device lost"),
        (TimeoutError("timed out"), Timeout, "TimeoutError: timed out"),
        (ConnectionResetError(104, "Connection reset by peer"), ConnectionFailed,
         "ConnectionResetError: [Errno 104] Connection reset by peer"),
        (KeyError("logits"), BackendError, "KeyError: 'logits'"),
    ]
    for exc, cls, detail in cases:
        fault = classify(exc)
        assert (type(fault), fault.detail) == (cls, detail)
        assert fault.kind in KINDS
    already = ServerError("HTTP 503 from /completions: busy")
    assert classify(already) is already
    advised = classify(torch.OutOfMemoryError("CUDA out of memory"), advice={OutOfMemory: "use less"})
    assert advised.advice == "use less" and OutOfMemory("x").advice != "use less"  # per instance


@pytest.mark.parametrize("message", [
    # vLLM 0.32 (renderers/params.py, v1/engine/input_processor.py), OpenAI, SGLang, llama.cpp
    ("This model's maximum context length is 8192 tokens. However, your prompt contains 9000 input tokens, which "
     "exceeds this limit even without any output tokens. Please reduce the length of the input prompt."),
    ("The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that "
     "`max_model_len` is no smaller than the number of text tokens."),
    ("'max_tokens' or 'max_completion_tokens' is too large: 512. This model's maximum context length is 1024 "
     "tokens and your request has 600 input tokens (512 > 1024 - 600)."),
    "The input (9000 tokens) is longer than the model's context length (8192 tokens).",
    "the request exceeds the available context size, try increasing it",
])
def test_a_refusal_that_says_the_prompt_does_not_fit_is_recognised(message: str) -> None:
    assert context_overflow(message)


@pytest.mark.parametrize("message", [
    "Token id 151700 is out of vocabulary", "The model `tiny` does not exist.", "Invalid API key",
    "temperature must be non-negative, got -1.0.",
])
def test_other_refusals_are_not_about_the_prompts_length(message: str) -> None:
    assert not context_overflow(message)


def test_a_servers_http_error_is_the_steps_or_the_machines() -> None:
    long = "This model's maximum context length is 8192 tokens. However, your prompt contains 9000 input tokens."
    assert isinstance(http_fault(400, "/completions", long), StepError)
    assert str(http_fault(400, "/completions", long)) == f"prompt too long: HTTP 400 from /completions: {long}"
    for status, cls, retry in ((400, RequestRejected, False), (401, RequestRejected, False),
                               (404, RequestRejected, False), (422, RequestRejected, False),
                               (429, ServerError, True), (500, ServerError, True), (503, ServerError, True)):
        fault = http_fault(status, "/completions", "no")
        assert (type(fault), fault.retry, fault.status, str(fault)) == (
            cls, retry, status, f"HTTP {status} from /completions: no")


def test_the_stop_line_names_the_fault_what_is_kept_and_what_to_do() -> None:
    fault = ServerError("HTTP 500 from /completions: boom (gave up after 5 attempts)")
    assert fault.summary() == "machine fault (server_error): HTTP 500 from /completions: boom (gave up after 5 attempts)"
    assert stop_line(fault, 7, "runs/x/result.jsonl") == (
        "machine fault (server_error): HTTP 500 from /completions: boom (gave up after 5 attempts); run stopped, 7 "
        "finished session(s) kept in runs/x/result.jsonl; check the server's log, then rerun the same command to "
        "resume")


def test_the_fault_log_counts_since_a_mark_with_the_stopping_fault() -> None:
    log = FaultLog()
    log.met["server_error"] += 2
    mark = log.snapshot()
    log.met["server_error"] += 1
    log.met["connection_failed"] += 3
    log.recovered += 2
    assert log.since(mark) == {"faults": {"connection_failed": 3, "server_error": 1}, "faults_recovered": 2}
    assert log.since(mark, EngineDied("gone")) == {
        "faults": {"connection_failed": 3, "engine_died": 1, "server_error": 1}, "faults_recovered": 2}
    assert FaultLog().since(FaultLog().snapshot()) == {"faults": {}, "faults_recovered": 0}
