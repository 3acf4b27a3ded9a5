"""`export --to inspect`: one Inspect evaluation log per run, built from inspect_ai's own log types and
written with its writer (the `export` extra). A sample per task: the conversation the model was shown at
the task's last step, its raw completion and parsed reply, every step's record in the sample's metadata, the
verdict and the error label as scores. The eval's metadata holds the run's specification (config, settings,
protocol, versions); its results hold the Table 6/7 figures."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wtb_local.analysis.exports.registry import Exported, Target
from wtb_local.analysis.exports.source import ExportRun, masked, run_status

TASK_NAME = "wildtoolbench"
# how a run's recorded end reads as an Inspect status (the true status stays in the metadata)
_STATUS = {"complete": "success", "interrupted": "cancelled", "incomplete": "cancelled", "failed": "error"}
_STOP = {"stop": "stop", "length": "max_tokens"}


def _steps(task: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    log = task.get("inference_log")
    log = log if isinstance(log, dict) else {}
    found = [(int(k.removeprefix("step_")), v) for k, v in log.items()
             if re.fullmatch(r"step_\d+", k) and isinstance(v, dict)]
    return sorted(found, key=lambda item: item[0])


def _tool_calls(calls: Any) -> list[Any] | None:
    from inspect_ai.tool import ToolCall

    if not isinstance(calls, list) or not calls:
        return None
    out = []
    for i, call in enumerate(calls):
        function = call.get("function", {}) if isinstance(call, dict) else {}
        text = function.get("arguments")
        error = None
        if isinstance(text, dict):
            arguments = text
        else:
            try:
                arguments = json.loads(text) if isinstance(text, str) else {}
                if not isinstance(arguments, dict):
                    arguments, error = {"value": arguments}, "arguments are not a JSON object"
            except ValueError:
                arguments, error = {"text": text}, "arguments are not JSON"
        out.append(ToolCall(id=str(call.get("id") or f"call_{i}"), function=str(function.get("name") or ""),
                            arguments=arguments, parse_error=error))
    return out


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _messages(messages: Any) -> list[Any]:
    """The conversation (OpenAI shape, as the result file keeps it) as Inspect chat messages."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser

    out: list[Any] = []
    for message in messages if isinstance(messages, list) else []:
        role, content = message.get("role"), _text(message.get("content"))
        if role == "system":
            out.append(ChatMessageSystem(content=content))
        elif role == "assistant":
            out.append(ChatMessageAssistant(content=content, tool_calls=_tool_calls(message.get("tool_calls"))))
        elif role == "tool":
            out.append(ChatMessageTool(content=content, tool_call_id=message.get("tool_call_id"),
                                       function=message.get("name")))
        else:
            out.append(ChatMessageUser(content=content))
    return out


def _reply(output: dict[str, Any], model: str) -> Any:
    from inspect_ai._util.content import ContentReasoning, ContentText
    from inspect_ai.model import ChatMessageAssistant

    content = _text(output.get("content"))
    reasoning = output.get("reasoning_content")
    body: Any = [ContentReasoning(reasoning=reasoning), ContentText(text=content)] if reasoning else content
    return ChatMessageAssistant(content=body, tool_calls=_tool_calls(output.get("tool_calls")), model=model,
                                source="generate")


def _step_record(index: int, step: dict[str, Any]) -> dict[str, Any]:
    output = step.get("inference_output")
    output = output if isinstance(output, dict) else {}
    keep = ("raw", "reasoning_content", "content", "tool_calls", "finish_reason", "parse_errors", "error_reason",
            "current_action_name_label", "current_action_arguments_label", "current_action_arguments_check_result",
            "prefilled_reasoning")
    record = {"step": index, **{key: output[key] for key in keep if key in output}}
    record["candidates"] = step.get("inference_answer")
    record["tools"] = (step.get("inference_input") or {}).get("tools")
    return record


def _tool_infos(tools: Any) -> list[Any]:
    """The tools a step offered (OpenAI shape) as Inspect's ToolInfo; a schema Inspect cannot read keeps its
    name and description only (the full schema stays in `metadata.steps`)."""
    from inspect_ai.tool import ToolInfo

    out = []
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        if not isinstance(function, dict) or not function.get("name"):
            continue
        name, description = str(function["name"]), str(function.get("description") or "")
        try:
            out.append(ToolInfo.model_validate({"name": name, "description": description,
                                                **({"parameters": function["parameters"]}
                                                   if isinstance(function.get("parameters"), dict) else {})}))
        except ValidationError:
            out.append(ToolInfo(name=name, description=description))
    return out


def _count(counts: Any, index: int) -> int:
    """A step's token count from the task's per-step list (0 when not recorded)."""
    value = counts[index] if isinstance(counts, list) and index < len(counts) else 0
    return int(value) if isinstance(value, int | float) else 0


def _events(steps: list[tuple[int, dict[str, Any]]], model: str, config: Any, when: str,
            counts: tuple[Any, Any] = (None, None)) -> list[Any]:
    """The task's transcript: per step a model event (the conversation shown, the tools offered, the reply),
    then a tool event per call whose result the next step's conversation holds (the dataset's observation).
    Timestamps are the run's start, so exporting again writes the same events."""
    from inspect_ai.event import ModelEvent, ToolEvent
    from inspect_ai.model import ChatCompletionChoice, ModelOutput, ModelUsage

    events: list[Any] = []
    for position, (index, step) in enumerate(steps):
        shown = step.get("inference_input") or {}
        recorded = step.get("inference_output")
        output: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        reply = _reply(output, model)
        error = (_text(output.get("error_reason")) or None) if output.get("finish_reason") == "error" else None
        tokens_in, tokens_out = _count(counts[0], index), _count(counts[1], index)
        events.append(ModelEvent(
            timestamp=when, working_start=0.0, model=model, input=_messages(shown.get("messages")),
            tools=_tool_infos(shown.get("tools")), tool_choice="auto", config=config,
            output=ModelOutput(model=model, completion=_text(output.get("raw", output.get("content"))),
                               choices=[ChatCompletionChoice(message=reply, stop_reason=_STOP.get(
                                   str(output.get("finish_reason")), "unknown"))],
                               usage=ModelUsage(input_tokens=tokens_in, output_tokens=tokens_out,
                                                total_tokens=tokens_in + tokens_out)
                               if tokens_in or tokens_out else None,
                               error=error),
            error=error, metadata={"step": index}))
        later = steps[position + 1][1].get("inference_input") or {} if position + 1 < len(steps) else {}
        results = {m.get("tool_call_id"): m for m in later.get("messages") or []
                   if isinstance(m, dict) and m.get("role") == "tool"}
        for call in reply.tool_calls or []:
            if call.id in results:
                events.append(ToolEvent(timestamp=when, working_start=0.0, id=call.id, function=call.function,
                                        arguments=call.arguments, result=_text(results[call.id].get("content")),
                                        metadata={"step": index}))
    return events


def _sample(run: ExportRun, record: Any, task: dict[str, Any] | None, model: str, config: Any = None) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ChatCompletionChoice, ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    task = task if isinstance(task, dict) else {}
    steps = _steps(task)
    last = steps[-1][1] if steps else {}
    shown = _messages((last.get("inference_input") or {}).get("messages"))
    output = found if isinstance(found := last.get("inference_output"), dict) else {}
    reply = _reply(output, model) if steps else None
    tokens_in = sum(v for v in task.get("input_token_count") or [] if isinstance(v, int | float))
    tokens_out = sum(v for v in task.get("output_token_count") or [] if isinstance(v, int | float))
    verdict = Score(
        value="C" if record.correct else "I", answer=_text(output.get("raw", output.get("content"))) or None,
        explanation=f"action name {task.get('action_name_label', 'n/a')}, arguments "
                    f"{task.get('action_arguments_label', 'n/a')}",
        metadata={"label": task.get("label"), "action_name_label": task.get("action_name_label"),
                  "action_arguments_label": task.get("action_arguments_label"), "is_optimal": record.optimal})
    label = Score(value=record.category or "none",
                  explanation="the task's one failure category (docs/reports.md, error taxonomy)")
    return EvalSample(
        id=f"{record.session_id}_t{record.task_idx}", epoch=1, input=shown or "", target=json.dumps(
            [step.get("inference_answer") for _, step in steps], ensure_ascii=False),
        messages=[*shown, *([reply] if reply else [])],
        output=ModelOutput(model=model, completion=_text(output.get("raw", output.get("content"))),
                           choices=[ChatCompletionChoice(message=reply, stop_reason=_STOP.get(
                               str(output.get("finish_reason")), "unknown"))] if reply else [],
                           error=output.get("error_reason") if output.get("finish_reason") == "error" else None),
        scores={"verdict": verdict, "error_label": label},
        events=_events(steps, model, config, _created(run), (task.get("input_token_count"),
                                                             task.get("output_token_count")))
        if config is not None else [],
        metadata={"session_id": record.session_id, "task_idx": record.task_idx, "task_type": record.task_type,
                  "subtype": record.subtype, "transitions": record.transitions,
                  "begin_of_current_task": (task.get("inference_log") or {}).get("begin_of_current_task"),
                  "steps": [_step_record(i, step) for i, step in steps],
                  "latency": task.get("latency"), "input_token_count": task.get("input_token_count"),
                  "output_token_count": task.get("output_token_count")},
        model_usage={model: ModelUsage(input_tokens=int(tokens_in), output_tokens=int(tokens_out),
                                       total_tokens=int(tokens_in + tokens_out))} if tokens_in or tokens_out else {},
    )


def _tasks_of(rows: list[dict[str, Any]] | None, key: str) -> dict[tuple[str, int], dict[str, Any]]:
    found = {}
    for row in rows or []:
        tasks = row.get(key)
        for i, task in enumerate(tasks if isinstance(tasks, list) else []):
            if isinstance(task, dict):
                found[(str(row.get("id")), i)] = task
    return found


def _merged_steps(scored: dict[str, Any], recorded: dict[str, Any]) -> dict[str, Any]:
    """The score file's task with each step's record as the result file kept it (the scorer may reorder a
    step's calls while matching them; the model's order is the result file's) plus the step's labels."""
    log = dict(scored.get("inference_log") or {})
    for name, step in (recorded.get("inference_log") or {}).items():
        if re.fullmatch(r"step_\d+", name) and isinstance(step, dict):
            labels = (log.get(name) or {}).get("inference_output") or {}
            log[name] = {**step, "inference_output": {**labels, **(step.get("inference_output") or {})}}
    return {**scored, "inference_log": log}


def _task_dicts(run: ExportRun) -> dict[tuple[str, int], dict[str, Any]]:
    """(session id, task index) -> the task's scored record, steps as the result file recorded them."""
    scored = _tasks_of(run.run.score_rows, "results")
    recorded = _tasks_of(run.run.result_rows, "result")
    return {key: _merged_steps(task, recorded.get(key, {})) for key, task in scored.items()}


def _created(run: ExportRun) -> str:
    started = run.manifest.first_started
    if started:
        return str(started)
    return dt.datetime.fromtimestamp(run.folder.stat().st_mtime, dt.UTC).isoformat(timespec="seconds")


def not_carried(run: ExportRun) -> list[str]:
    """What an Inspect log of this run cannot hold."""
    missing = []
    if not run.run.detailed:
        missing.append("samples: the run has a metric file only")
    if run.empty_columns:
        missing.append(f"results {', '.join(run.empty_columns)}: no task in the bucket")
    status = run_status(run)
    if status not in ("complete",):
        missing.append(f"status {status}: Inspect's closest is {_STATUS.get(status, 'started')} "
                       "(the manifest's status is in the eval metadata)")
    missing.append("report sections beyond Table 6/7 (subtypes, transitions, Table 8): each sample's "
                   "error_label carries its category")
    return missing


def build_log(run: ExportRun) -> Any:
    """The run as an inspect_ai EvalLog (not yet written)."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalError,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalRevision,
        EvalScore,
        EvalSpec,
        EvalStats,
    )
    from inspect_ai.model import GenerateConfig

    facts = run.facts
    model = facts.model_id
    key = run.key
    tasks = _task_dicts(run)
    sampling = run.manifest.sampling
    config = GenerateConfig(temperature=sampling.temperature, top_p=sampling.top_p,
                            max_tokens=sampling.max_new_tokens, seed=sampling.seed)
    samples = [_sample(run, record, tasks.get((record.session_id, record.task_idx)), model, config)
               for record in run.run.tasks]
    manifest = run.manifest
    versions = manifest.wtb_local
    packages = {name: v for name, v in sorted(manifest.packages.items()) if v}
    if versions.version:
        packages["wtb_local"] = versions.version
    dataset = manifest.dataset
    created = _created(run)
    status = run_status(run)
    missing = not_carried(run)
    spec = EvalSpec(
        task_id=key[:22], eval_id=key[22:44], run_id=key[44:64], created=created, task=TASK_NAME,
        task_display_name=f"WildToolBench ({facts.protocol} protocol, {facts.checker} checker)",
        dataset=EvalDataset(name=str(dataset.source or facts.dataset or "unknown"),
                            location=dataset.path or None,
                            samples=len(samples), sample_ids=[s.id for s in samples]),
        model=model,
        model_generate_config=config,
        config=EvalConfig(),
        revision=EvalRevision(type="git", origin="wtb_local", commit=versions.git_commit,
                              dirty=versions.git_dirty) if versions.git_commit else None,
        packages=packages,
        metadata=masked({"wtb_local_run_key": key, "wtb_local_score_set": run.score_set.name,
                  "wtb_local_run_of": run.run_key, "run_dir": str(run.folder), "label": run.label,
                  "status": status, "protocol": manifest.protocol.written() or {"name": facts.protocol,
                                                                             "checker": facts.checker},
                  "config_hash": run.manifest.config_hash, "config": run.config,
                  "settings": run.settings, "sources": dict(manifest.sources), "wtb_local": versions.written(),
                  "packages": dict(manifest.packages), "machine": manifest.machine.written(),
                  "sampling_used": manifest.sampling_used.written(), "dataset": dataset.written(),
                  "thinking": manifest.thinking.written(),
                  "invocations": manifest.written_invocations() if manifest.has("invocations") else None,
                  "health": run.health(), "not_carried": missing}),
    )

    errors = run.errors  # Table 6/7 standard errors, clustered by session (docs/reports.md "Uncertainty")

    def metrics(table: int) -> dict[str, Any]:
        # each column's value and, Inspect's way, its standard error beside it as `<column>_stderr` (in %)
        out: dict[str, Any] = {}
        for c, v in run.tables[table].items():
            if v is None:
                continue
            out[c] = EvalMetric(name=c, value=v)
            found = errors.get(table, {}).get(c)
            if found is not None and math.isfinite(found.se):
                out[f"{c}_stderr"] = EvalMetric(name=f"{c}_stderr", value=100.0 * found.se)
        return out

    def uncertainty(table: int) -> dict[str, Any]:
        return {"uncertainty": {c: e.as_percent() for c, e in errors[table].items()}} if errors.get(table) else {}

    total = run.metric.get("total_info", {})
    verdict = {"accuracy": EvalMetric(name="accuracy", value=float(total.get("task", {}).get("accuracy", 0.0))),
               "session_accuracy": EvalMetric(name="session_accuracy",
                                              value=float(total.get("session", {}).get("accuracy", 0.0)))}
    for name, column in (("stderr", "task_acc"), ("session_stderr", "session_acc")):
        found = errors.get(6, {}).get(column)
        if found is not None and math.isfinite(found.se):  # as a fraction, like the accuracies beside it
            verdict[name] = EvalMetric(name=name, value=found.se)
    results = EvalResults(
        total_samples=run.tasks_scored, completed_samples=len(samples),
        scores=[
            EvalScore(name="verdict", scorer="wtb_local", scored_samples=len(samples), metrics=verdict),
            EvalScore(name="table6", scorer="wtb_local", metrics=metrics(6),
                      metadata={"unit": "%", "columns": "single, multi, clarify, chat, order1-4, task, session",
                                **uncertainty(6)}),
            EvalScore(name="table7", scorer="wtb_local", metrics=metrics(7),
                      metadata={"unit": "%", "columns": "P, S, S+P, multi accuracy; AP S, S+P, overall; "
                                                        "OP P, S+P, overall", **uncertainty(7)}),
        ],
        metadata={"sessions": run.sessions_scored, "tasks": run.tasks_scored},
    )
    ended = next((i.finished for i in reversed(run.manifest.invocations) if i.finished), None)
    failure = next((i.failure for i in reversed(run.manifest.invocations) if i.failure), None)
    return EvalLog(
        status=_STATUS.get(status, "started"), eval=spec, results=results,
        stats=EvalStats(started_at=created, completed_at=str(ended or created)),
        error=EvalError(message=str(failure), traceback="", traceback_ansi="") if status == "failed" else None,
        samples=samples,
    )


def log_name(run: ExportRun) -> str:
    """Inspect's file naming (`<created>_<task>_<task id>.eval`); the task id is the start of the record's
    key, so exporting the same run again replaces its log, and a re-scoring gets a log of its own."""
    stamp = _created(run).replace(":", "-")
    return f"{stamp}_{TASK_NAME}_{run.key[:22]}.eval"


def export_inspect(runs: list[ExportRun], out_dir: str | Path) -> list[tuple[Path, list[str]]]:
    """Write one log per run into `out_dir`; returns each file with what it could not carry."""
    from inspect_ai.log import write_eval_log

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for run in runs:
        log = build_log(run)
        path = out / log_name(run)
        write_eval_log(log, str(path), format="eval")
        written.append((path, list(log.eval.metadata["not_carried"])))
    return written


class InspectExporter:
    """`--to inspect DEST`: one log per score set of each run into the folder DEST (registry.py's interface)."""

    def __init__(self, target: Target) -> None:
        self.dest = str(target.dest)

    def check(self) -> None:
        """Nothing to reach: the folder is made when the first log is written."""

    def export(self, runs: list[ExportRun]) -> list[Exported]:
        return [Exported(run.label, str(path), missing)
                for (path, missing), run in zip(export_inspect(runs, self.dest), runs, strict=True)]


__all__ = ["TASK_NAME", "InspectExporter", "build_log", "export_inspect", "log_name", "not_carried"]
