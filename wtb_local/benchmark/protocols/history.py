"""The conversation the paper harness sends for task i, and its step loop (paper-harness.md §1.3, §1.5,
§4.1).

History of an earlier task j: its user message, then its first optimal path: ask node -> assistant
observation + user `user_input`; prepare node -> assistant observation; tool step -> one assistant
message with dict arguments and no ids, then ONE tool message holding the JSON array of the step's
observations, no `tool_call_id`. No system message: the canonical conversation starts with the
harness's default `Current Date:<date>` system message, which each family's prompt builder reshapes
(families.py). User texts come from `english_messages` segments (role prefixes stripped) when the
session has them, else from `english_tasks` (recorded as inferred).

In the live loop (same judging as the release, §4.1) the observations of an accepted tool step come
back per family (§1.5): one tool message per observation carrying the model's j-th call id
(`per_call`), or one message with the JSON array and the first call's id (`array`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any, Final, cast

from wtb_local.benchmark.evaluator.conversation import GoldNode, gold_nodes, gold_path_steps
from wtb_local.benchmark.evaluator.episode import Episode
from wtb_local.benchmark.evaluator.paths import Step, TaskGraph
from wtb_local.benchmark.protocols.dates import DATE_MARKER
from wtb_local.contract.messages import ChatMessage, StepRecord, ToolSchema
from wtb_local.contract.schema import Session

ROLE_PREFIXES_EN = ("ai", "ai agent", "user", "ai agent assistant")
ROLE_PREFIXES_ZH = ("用户", "AI Agent助手", "AI Agent")
TASK_SEPARATOR = "====="
# marks the current task's user message for builders that append the date to it; removed before rendering
CURRENT_TASK_KEY: Final = "wtb_current_task"


def strip_role(text: str, english: bool = True) -> str:
    """`remove_role` (§1.3 step 4): a known role prefix before the first colon goes, the colon too, the
    space after it stays (`User: hi` -> ` hi`)."""
    colon = text.find(":" if english else "：")
    if colon == -1:
        return text
    prefix = text[:colon]
    known = prefix.lower() in ROLE_PREFIXES_EN if english else prefix in ROLE_PREFIXES_ZH
    return text[colon + 1:] if known else text


def split_segments(messages: Sequence[Any]) -> list[list[Any]]:
    """`english_messages` split at its `=====` string elements (§1.3 step 1)."""
    segments: list[list[Any]] = []
    current: list[Any] = []
    for message in messages:
        if isinstance(message, str) and TASK_SEPARATOR in message:
            segments.append(current)
            current = []
        else:
            current.append(message)
    if current:
        segments.append(current)
    return segments


def task_texts(session: Session) -> tuple[list[str], str]:
    """Per task the user text the harness sends, and where it came from."""
    extra = session.model_extra or {}
    messages, task_ids = extra.get("english_messages"), extra.get("task_ids")
    if isinstance(messages, list) and isinstance(task_ids, list) and len(task_ids) == len(session.english_tasks):
        segments = split_segments(messages)
        if len(segments) >= len(task_ids):
            texts = []
            for i, index in enumerate(task_ids):
                message = segments[i][index] if index < len(segments[i]) else None
                content = message.get("content") if isinstance(message, dict) else None
                if not isinstance(content, str) or session.english_tasks[i] not in content:
                    break
                texts.append(strip_role(content))
            else:
                return texts, "english_messages segments, role prefixes stripped (documented, §1.3)"
    return ([strip_role(task) for task in session.english_tasks],
            "english_tasks, role prefixes stripped (inferred: english_messages/task_ids absent or not matching)")


def history_messages(nodes: Sequence[GoldNode], path: Sequence[Step]) -> list[ChatMessage]:
    """One task's first optimal path as history (§1.3 step 2): the harness's format of the gold walk
    (arguments as given, no call ids, one tool message holding every observation of a step)."""
    messages: list[ChatMessage] = []
    for said, called in gold_path_steps(nodes, path):
        messages.extend(said)
        if called:
            messages.append({"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": node.name, "arguments": node.arguments}} for node in called]})
            messages.append({"role": "tool", "content": json.dumps([node.observation for node in called],
                                                                   ensure_ascii=False)})
    return messages


def session_prefixes(session: Session, dates: Sequence[str], texts: Sequence[str],
                     nodes_per_task: Sequence[Sequence[GoldNode]], graphs: Sequence[TaskGraph]) -> list[list[ChatMessage]]:
    """For each task, the canonical conversation at its first step (task i carries date i)."""
    history: list[ChatMessage] = []
    prefixes: list[list[ChatMessage]] = []
    for i, text in enumerate(texts):
        system: ChatMessage = {"role": "system", "content": DATE_MARKER + dates[i]}
        current: ChatMessage = {"role": "user", "content": text, CURRENT_TASK_KEY: True}
        prefixes.append(copy.deepcopy([system, *history, current]))
        history.append({"role": "user", "content": text})
        history.extend(history_messages(nodes_per_task[i], graphs[i].first_optimal_path))
    return prefixes


class PaperEpisode(Episode):
    """The release step loop (§4.1 is identical) with the harness's conversation and the family's shape
    of live tool results; the model's calls are stored with dict arguments, as the handles store them."""

    def __init__(self, *args: Any, tool_results: str = "per_call", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tool_results = tool_results

    def _judge_calls(self, record: StepRecord, reasoning: Any, content: Any, tool_calls: Any) -> None:
        before = len(self._messages)
        super()._judge_calls(record, reasoning, content, tool_calls)
        added = self._messages[before:]
        if not added:
            return
        assistant, results = added[0], added[1:]
        for call in assistant.get("tool_calls") or []:
            arguments = call.get("function", {}).get("arguments")
            if isinstance(arguments, str):
                try:
                    call["function"]["arguments"] = json.loads(arguments)
                except ValueError:
                    pass
        assistant.pop("reasoning_content", None)  # no handle strips or echoes reasoning (§2)
        if self.tool_results == "array":
            candidate = self._accepted[max(self._accepted)]  # the step just accepted
            observations = [self.nodes[i].observation for i in candidate]
            shaped: list[ChatMessage] = [{"role": "tool", "content": json.dumps(observations, ensure_ascii=False),
                       "tool_call_id": results[0]["tool_call_id"]}]
            self._messages[before + 1:] = shaped


def paper_tools(session: Session) -> list[ToolSchema]:
    """The tools a local model's template is handed under the paper protocol: the dataset's own schemas,
    unconverted. Turning `"float"` into `"number"` (and the like) is the API handlers' step
    (docs/reference/paper-harness.md §2.12), the release evaluator's, never the local models' (§2.1-§2.11)."""
    return cast("list[ToolSchema]", copy.deepcopy(session.english_tools))  # the release wraps every tool


def paper_episodes(session: Session, *, dates: Sequence[str], texts: Sequence[str], tool_results: str,
                   id_style: str = "openai") -> list[PaperEpisode]:
    tools = paper_tools(session)
    nodes_per_task = [gold_nodes(nodes) for nodes in session.english_answer_list]
    graphs = [TaskGraph([n.name for n in nodes], [n.dependency_list for n in nodes]) for nodes in nodes_per_task]
    prefixes = session_prefixes(session, dates, texts, nodes_per_task, graphs)
    return [PaperEpisode(session.id, i, nodes_per_task[i], prefixes[i], tools, graph=graphs[i],
                         id_style=id_style, tool_results=tool_results)
            for i in range(len(session.english_tasks))]
