"""The step loop of one task as a state machine (docs/evaluation.md §4), driven from outside.

The runner keeps thousands of `Episode`s in flight: `request()` gives the conversation to send now,
`accept(reply)` judges the reply by action names, extends the conversation and records the step in the
task's `inference_log` exactly as the reference's result file does (docs/evaluation.md §7).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from wtb_local.benchmark.evaluator.conversation import GoldNode, gold_nodes, session_prefixes
from wtb_local.benchmark.evaluator.paths import Step, TaskGraph
from wtb_local.benchmark.evaluator.tools import convert_tools
from wtb_local.contract.messages import (
    CandidateAnswer,
    ChatMessage,
    Reply,
    SessionResult,
    StepOutput,
    StepRecord,
    TaskResult,
    ToolSchema,
)
from wtb_local.contract.schema import ASK_ACTION, PREPARE_ACTION, Session

ERROR_EMPTY = "tool_calls and content are None or empty"
ERROR_NO_CANDIDATE = "action name not in candidate_answer_function_list"
ERROR_PARSE = "parse tool_calls failed, error: {}"
ERROR_BEYOND = "current step: {}, idx_list is None"

# docs/evaluation.md §7 [defined here]: a step that had no candidates to compare still carries a readable
# answer.
_EMPTY_ANSWER: dict[str, CandidateAnswer] = {"candidate_0_answer_function_list": {"action": []}}


class Episode:
    """One task of one session: gold history + the model's own steps for this task."""

    def __init__(
        self,
        session_id: str,
        task_idx: int,
        nodes: Sequence[Any],
        messages: Sequence[ChatMessage],
        tools: list[ToolSchema],
        *,
        graph: TaskGraph | None = None,
        id_style: str = "openai",
        owned: bool = False,
    ) -> None:
        """`messages` is the conversation at step 0 (ending with the task's user message); `tools` the
        converted tools; `nodes` the task's gold nodes (release dicts, `Node` models or `GoldNode`s).
        `owned`: `messages` are fresh dicts no one else holds (session_prefixes'), taken without a copy."""
        self.session_id = session_id
        self.task_idx = task_idx
        self.nodes: list[GoldNode] = [n if isinstance(n, GoldNode) else gold_nodes([n])[0] for n in nodes]
        self.graph = graph if graph is not None else TaskGraph(
            [n.name for n in self.nodes], [n.dependency_list for n in self.nodes]
        )
        self.id_style = id_style
        self.tools = tools
        self.done = False
        self.step = 0
        self._messages: list[ChatMessage] = list(messages) if owned else copy.deepcopy(list(messages))
        self._label = "error"
        self._accepted: dict[int, Step] = {}  # tool steps: they narrow the paths
        # text steps taken as ask: they do not narrow (docs/evaluation.md §4)
        self._asked: dict[int, Step] = {}
        self._log: dict[str, Any] = {
            "task_idx": task_idx,
            "begin_of_current_task": copy.deepcopy(self._messages[-1]) if self._messages else None,
        }
        self._latency: list[float] = []
        self._input_tokens: list[int] = []
        self._output_tokens: list[int] = []

    # --- driving ----------------------------------------------------------------------------------------

    def request(self) -> tuple[list[ChatMessage], list[ToolSchema]]:
        """(messages, tools) to send now: fresh message dicts, the same converted tools every step."""
        return copy.deepcopy(self._messages), self.tools

    def conversation(self) -> tuple[list[ChatMessage], list[ToolSchema]]:
        """`request()` without the copy, for a caller that only reads it (the runner renders it): a fresh
        list of the episode's own message dicts, which must not be changed. Message dicts are never
        changed once appended, so this is the conversation of the current step (docs/runner-speed.md §2)."""
        return list(self._messages), self.tools

    def accept(
        self,
        reply: Mapping[str, Any],
        *,
        error_reason: str | None = None,
        latency: float = 0.0,
        input_tokens: int = 0,
        output_tokens: int = 0,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Judge the reply to the current step and advance (docs/evaluation.md §4)."""
        if self.done:
            raise RuntimeError(f"{self.session_id} task {self.task_idx}: accept() after the task ended")
        content = reply.get("content")
        tool_calls = copy.deepcopy(reply.get("tool_calls"))
        reasoning = reply.get("reasoning_content")
        output: StepOutput = {
            "reasoning_content": reasoning,
            "content": content,
            "tool_calls": copy.deepcopy(tool_calls),
        }
        record: StepRecord = {
            # The step's input shares the message dicts (never changed once appended); `result()` copies.
            "inference_input": {"messages": list(self._messages), "tools": self.tools},
            "inference_output": output,
        }
        self._log[f"step_{self.step}"] = record
        self._latency.append(latency)
        self._input_tokens.append(input_tokens)
        self._output_tokens.append(output_tokens)

        if error_reason is not None:
            self._fail(record, error_reason, None)
        elif not tool_calls:
            self._judge_text(record, content)
        else:
            self._judge_calls(record, reasoning, content, tool_calls)

        extras = cast("dict[str, object]", output)  # runner facts: keys beyond the reference's
        for key, value in (extra or {}).items():
            extras.setdefault(key, value)  # reference keys win; extras follow them

    def annotate(self, step: int, fields: Mapping[str, Any]) -> None:
        """Add facts measured after judging (the runner's own time for the step) to an accepted step's
        output; like `extra`, they follow the reference keys and never replace one."""
        output: dict[str, object] = self._log[f"step_{step}"]["inference_output"]
        for key, value in fields.items():
            output.setdefault(key, value)

    def _judge_text(self, record: StepRecord, content: Any) -> None:
        if content is None or content == "":
            self._fail(record, ERROR_EMPTY, None)
            return
        if self.step >= len(self.nodes):
            self._fail(record, ERROR_BEYOND.format(self.step), None)
            return
        candidates = self.graph.candidates(self.step, self._accepted)
        for candidate in candidates:
            names = [self.nodes[i].name for i in candidate]
            if ASK_ACTION in names:
                ask = self.nodes[candidate[names.index(ASK_ACTION)]]
                self._messages.append({"role": "assistant", "content": content})
                self._messages.append({"role": "user", "content": ask.user_input})
                answer = self._answer(candidate)
                answer["observation"] = ask.observation
                answer["user_input"] = ask.user_input
                self._asked[self.step] = candidate
                self._pass(record, answer, finished=False)
                return
            if PREPARE_ACTION in names:
                prepare = self.nodes[candidate[names.index(PREPARE_ACTION)]]
                self._messages.append({"role": "assistant", "content": content})
                answer = self._answer(candidate)
                answer["observation"] = prepare.observation
                self._pass(record, answer, finished=True)
                return
        self._fail(record, ERROR_NO_CANDIDATE, candidates)

    def _judge_calls(self, record: StepRecord, reasoning: Any, content: Any, tool_calls: Any) -> None:
        ids: list[Any] = []
        names: list[Any] = []
        try:
            for call in tool_calls:
                call_id = call["id"]
                function = call["function"]
                name = function["name"]
                _ = function["arguments"]  # a call must carry arguments (docs/evaluation.md §4 B)
                ids.append(call_id)
                names.append(name)
        except (KeyError, TypeError, IndexError) as exc:  # reported with Python's own message ("'id'")
            self._fail(record, ERROR_PARSE.format(exc), None)
            return
        # A name that is not text still goes on to the comparison (the reference only sorts the names,
        # so it simply matches no candidate); only names that cannot be ordered, where the reference
        # crashes, stop here [defined here].
        try:
            predicted = sorted(names)
        except TypeError:
            self._fail(record, ERROR_PARSE.format("tool names cannot be ordered"), None)
            return
        if self.step >= len(self.nodes):
            self._fail(record, ERROR_BEYOND.format(self.step), None)
            return
        candidates = self.graph.candidates(self.step, self._accepted)
        for candidate in candidates:
            if [self.nodes[i].name for i in candidate] != predicted:
                continue
            message: ChatMessage = {"role": "assistant"}
            if reasoning is not None:
                message["reasoning_content"] = reasoning
            message["content"] = content
            message["tool_calls"] = tool_calls
            self._messages.append(message)
            for j, position in enumerate(candidate):
                observation = self.nodes[position].observation
                if not isinstance(observation, str):
                    observation = json.dumps(observation, ensure_ascii=False)
                # Reference quirk: the j-th observation (candidate order) takes the model's j-th id.
                self._messages.append({"role": "tool", "content": observation, "tool_call_id": ids[j]})
            self._accepted[self.step] = candidate
            # [defined here] an accepted prepare_to_answer call ends the task as correct.
            finished = any(self.nodes[i].name == PREPARE_ACTION for i in candidate)
            self._pass(record, self._answer(candidate), finished=finished)
            return
        self._fail(record, ERROR_NO_CANDIDATE, candidates)

    def _answer(self, candidate: Step) -> CandidateAnswer:
        return {
            "action": [
                {"arguments": self.nodes[i].gold_text, "name": self.nodes[i].name} for i in candidate
            ]
        }

    def _listing(self, candidate: Step) -> CandidateAnswer:
        """An error step's view of one compared candidate (pseudo-actions show their observation)."""
        answer = self._answer(candidate)
        for i in candidate:
            node = self.nodes[i]
            if node.name == ASK_ACTION:
                answer["observation"] = node.observation
                answer["user_input"] = node.user_input
            elif node.name == PREPARE_ACTION:
                answer["observation"] = node.observation
        return answer

    def _pass(self, record: StepRecord, answer: CandidateAnswer, *, finished: bool) -> None:
        record["inference_output"]["current_action_name_label"] = "correct"
        record["inference_answer"] = {"candidate_0_answer_function_list": answer}
        if finished:
            self._label = "correct"
            self.done = True
        else:
            self.step += 1

    def _fail(self, record: StepRecord, reason: str, candidates: Sequence[Step] | None) -> None:
        record["inference_output"]["current_action_name_label"] = "error"
        record["inference_output"]["error_reason"] = reason
        if candidates:
            record["inference_answer"] = {
                f"candidate_{i}_answer_function_list": self._listing(c) for i, c in enumerate(candidates)
            }
        else:
            record["inference_answer"] = copy.deepcopy(_EMPTY_ANSWER)
        self._label = "error"
        self.done = True

    # --- oracle and results -----------------------------------------------------------------------------

    def gold_path(self) -> tuple[Step, ...]:
        """The oracle's path (kept for callers of the Episode API): see `wtb_local.benchmark.evaluator.gold_replies`."""
        from wtb_local.benchmark.evaluator.gold_replies import gold_path  # deferred: start-up

        return gold_path(self)

    def gold_reply(self) -> Reply:
        """The oracle's reply now (kept for callers of the Episode API): see
        `wtb_local.benchmark.evaluator.gold_replies`, which plans it; the evaluator only judges."""
        from wtb_local.benchmark.evaluator.gold_replies import gold_reply  # deferred: start-up

        return gold_reply(self)

    @property
    def taken_steps(self) -> dict[int, Step]:
        """The candidate matched at each accepted step (tool and ask steps), as node positions."""
        return dict(sorted({**self._accepted, **self._asked}.items()))

    @property
    def accepted_steps(self) -> dict[int, Step]:
        """Tool steps taken so far (they narrow the paths), by step."""
        return dict(self._accepted)

    @property
    def asked_steps(self) -> dict[int, Step]:
        """Text steps taken as an ask (they do not narrow the paths, docs/evaluation.md §4), by step."""
        return dict(self._asked)

    @property
    def action_name_label(self) -> str:
        return self._label

    @property
    def is_optimal(self) -> bool:
        return self._label == "correct" and self.step == self.graph.min_length - 1

    def result(self, *, fresh: bool = True) -> TaskResult:
        """The task's result-file entry (docs/evaluation.md §7), as fresh dicts; `fresh=False` shares the
        episode's own (for a finished episode whose entry is only serialised, docs/runner-speed.md §2)."""
        return {
            "action_name_label": self._label,
            "is_optimal": self.is_optimal,
            "inference_log": copy.deepcopy(self._log) if fresh else self._log,
            "latency": list(self._latency),
            "input_token_count": list(self._input_tokens),
            "output_token_count": list(self._output_tokens),
        }


def session_episodes(session: Session, *, id_style: str = "openai") -> list[Episode]:
    """One Episode per task of the session; the gold history is built once per session."""
    tools = convert_tools(session.english_tools)
    nodes_per_task = [gold_nodes(nodes) for nodes in session.english_answer_list]
    graphs = [
        TaskGraph([n.name for n in nodes], [n.dependency_list for n in nodes]) for nodes in nodes_per_task
    ]
    prefixes = session_prefixes(
        session.id,
        session.english_env_info,
        session.english_tasks,
        nodes_per_task,
        graphs,
        id_style=id_style,
    )
    return [
        # each prefix is a fresh copy made for its task alone (session_prefixes): not copied again
        Episode(session.id, i, nodes_per_task[i], prefixes[i], tools, graph=graphs[i], id_style=id_style,
                owned=True)
        for i in range(len(session.english_tasks))
    ]


def session_result(session: Session, episodes: Sequence[Episode], model_name: str, *,
                   fresh: bool = True) -> SessionResult:
    """One result-file line: {"id", "model_name", "result": [task results in task order]} (`fresh`: see
    `Episode.result`)."""
    ordered = sorted(episodes, key=lambda episode: episode.task_idx)
    return {"id": session.id, "model_name": model_name, "result": [e.result(fresh=fresh) for e in ordered]}
