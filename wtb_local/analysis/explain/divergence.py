"""Where two runs part on one task: the first point of divergence, step by step.

For each step of the task, in order, the two runs' records are compared at each stage (docs/explain.md,
"First point of divergence"); the first stage that differs is the divergence:

1. `prompt`: the conversation sent (the step's `inference_input`: messages and tools) differs, or it is
   the same but a factor that renders it into the prompt differs (template, its kwargs, tokenizer,
   thinking mode, protocol), the completions differ, and so do the prompts. Rendered prompts are not in
   the result file: they are rendered again from each run's manifest (prompts.py); where that cannot be
   done, a differing prompt factor counts, and the detail says so;
2. `completion`: the same prompt, another completion (`raw`, `finish_reason`): engine, seed, sampling,
   length, or, when no recorded factor differs, the engine's own nondeterminism;
3. `parse`: the same completion, other parsed calls or text (`tool_calls`, `content`, a parse failure);
4. `verdict`: the same calls, another step label (`current_action_name_label`, the argument label of the
   score file), or at the end, the same calls at every step and another task verdict (checker).

A run without raw completions (the scripted backend) skips stage 2.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from wtb_local.analysis.explain.factors import FACTORS
from wtb_local.analysis.explain.prompts import same_prompt
from wtb_local.analysis.explain.runs import ExplainRun, TaskKey


@dataclass(frozen=True)
class Divergence:
    stage: str  # prompt | completion | parse | verdict
    step: int | None  # the step where it shows (None: the task's verdict only)
    detail: str
    factors: tuple[str, ...]  # the factors of that stage that differ between the two runs

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "step": self.step, "detail": self.detail, "factors": list(self.factors)}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _task_log(row: dict[str, Any] | None, task_idx: int, field: str) -> dict[str, Any]:
    tasks = (row or {}).get(field)
    for position, task in enumerate(tasks if isinstance(tasks, list) else []):
        log = _dict(_dict(task).get("inference_log"))
        if log.get("task_idx", position) == task_idx:
            return log
    return {}


def _steps(log: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {int(key[5:]): _dict(entry) for key, entry in log.items()
            if key.startswith("step_") and key[5:].isdigit()}


def _calls(output: dict[str, Any]) -> list[tuple[str, str]]:
    calls = []
    for call in output.get("tool_calls") or []:
        function = _dict(_dict(call).get("function"))
        arguments = function.get("arguments")
        try:
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            pass
        calls.append((str(function.get("name")), _canonical(arguments)))
    return calls


@dataclass(frozen=True)
class _Step:
    conversation: str
    raw: str | None
    finish: str | None
    failed: str | None  # the request was not served: why
    parsed: tuple[Any, ...]
    label: tuple[Any, ...]


def _step(entry: dict[str, Any], scored: dict[str, Any]) -> _Step:
    output = _dict(entry.get("inference_output"))
    finish = output.get("finish_reason")
    failed = str(output.get("error_reason") or "request failed") if finish == "error" else None
    calls = _calls(output)
    parse_failed = bool(output.get("parse_errors")) and not calls
    content = " ".join(str(output.get("content") or "").split())
    label = (output.get("current_action_name_label"),
             _dict(scored.get("inference_output")).get("current_action_arguments_label"))
    raw = output.get("raw")
    return _Step(conversation=_canonical(entry.get("inference_input")), raw=raw if isinstance(raw, str) else None,
                 finish=finish if isinstance(finish, str) else None, failed=failed,
                 parsed=(tuple(calls), content, parse_failed), label=label)


def _stage_factors(a: ExplainRun, b: ExplainRun, stage: str) -> tuple[str, ...]:
    return tuple(f.name for f in FACTORS if f.stage == stage and a.factors[f.name] != b.factors[f.name])


def first_divergence(a: ExplainRun, b: ExplainRun, key: TaskKey) -> Divergence:
    """The first stage at which task `key` differs between runs `a` and `b`."""
    session_id, task_idx = key
    logs = [_task_log(run.result_rows.get(session_id), task_idx, "result") for run in (a, b)]
    scored = [_steps(_task_log(run.score_rows.get(session_id), task_idx, "results")) for run in (a, b)]
    steps = [_steps(log) for log in logs]
    prompt_factors = _stage_factors(a, b, "prompt")
    for k in sorted(set(steps[0]) | set(steps[1])):
        if k not in steps[0] or k not in steps[1]:
            shorter = a if k not in steps[0] else b
            return Divergence("verdict", k, f"{shorter.label} ended the task before step {k} with the same steps "
                              "until then", _stage_factors(a, b, "verdict"))
        x, y = (_step(steps[i][k], scored[i].get(k, {})) for i in (0, 1))
        if x.conversation != y.conversation:
            return Divergence("prompt", k, "the conversation sent (messages, tools) differs",
                              prompt_factors)
        outputs = _outputs_differ(a, b, x, y)
        if outputs is not None:
            how = ""
            if prompt_factors:
                same, how = same_prompt(a, b, steps[0][k])
                if same is not True:
                    said = (f"other prompts ({how})" if same is False
                            else f"prompts that may differ (not re-rendered: {how}; factors read from the manifests)")
                    return Divergence("prompt", k, f"the same messages render to {said}; then {outputs}",
                                      prompt_factors)
                how = f" ({', '.join(prompt_factors)} differ{'s' if len(prompt_factors) == 1 else ''} but the " \
                      f"prompts are the same, {how})"
            completion = _stage_factors(a, b, "completion")
            return Divergence("completion", k, f"the same prompt, {outputs}{how}"
                              + ("" if completion else ": no recorded factor differs (the engine's own "
                                 "nondeterminism: batching, hardware)"), completion)
        if x.parsed != y.parsed:
            what = [name for name, p, q in zip(("calls", "text", "parse failure"), x.parsed, y.parsed, strict=True)
                    if p != q]
            source = "the same completion" if x.raw is not None and y.raw is not None else "no raw completion recorded"
            return Divergence("parse", k, f"{source}, other parsed {', '.join(what)}", _stage_factors(a, b, "parse"))
        if _labels_differ(x.label, y.label):
            return Divergence("verdict", k, f"the same calls, another step label ({_label(x.label)} vs "
                              f"{_label(y.label)})", _stage_factors(a, b, "verdict"))
    return Divergence("verdict", None, "the same calls at every step, another task verdict",
                      _stage_factors(a, b, "verdict"))


def _labels_differ(x: tuple[Any, ...], y: tuple[Any, ...]) -> bool:
    """Step labels compared on what both records hold: the lenient checker's score file keeps no per-step
    argument label."""
    return x[0] != y[0] or (x[1] is not None and y[1] is not None and x[1] != y[1])


def _outputs_differ(a: ExplainRun, b: ExplainRun, x: _Step, y: _Step) -> str | None:
    """What differs between the two runs' outputs for one step (None: the same, or not recorded)."""
    if x.failed != y.failed:
        which = "; ".join(f"{run.label}: {why}" for run, why in ((a, x.failed), (b, y.failed)) if why)
        return f"the request was not served in {which}"
    if x.failed or x.raw is None or y.raw is None or (x.raw == y.raw and x.finish == y.finish):
        return None
    return "another completion" + (f" (finish_reason {x.finish} vs {y.finish})" if x.finish != y.finish else "")


def _label(label: tuple[Any, ...]) -> str:
    name, arguments = label
    return f"name {name}" + (f", arguments {arguments}" if arguments else "")


def compare_pair(a: ExplainRun, b: ExplainRun, keys: list[TaskKey]) -> dict[str, Any]:
    """Task verdict flips between two runs on `keys`, each with its first point of divergence."""
    flipped = []
    for key in keys:
        if a.verdicts[key] == b.verdicts[key]:
            continue
        found = first_divergence(a, b, key)
        flipped.append({"task": f"{key[0]}/{key[1]}", "a": _verdict(a.verdicts[key]),
                        "b": _verdict(b.verdicts[key]), **found.as_dict()})
    stages = {stage: sum(1 for f in flipped if f["stage"] == stage)
              for stage in ("prompt", "completion", "parse", "verdict")}
    return {"a": a.label, "b": b.label, "flipped": flipped, "stages": stages,
            "only_a": sum(1 for f in flipped if f["a"] == "correct"),
            "only_b": sum(1 for f in flipped if f["b"] == "correct")}


def _verdict(correct: bool) -> str:
    return "correct" if correct else "error"
