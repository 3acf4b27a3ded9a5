"""The conversation given to the model for each task (docs/evaluation.md §3): system line, gold history,
user task.

Nodes are read into `GoldNode`s (plain fields, release dicts or `wtb_local.contract.schema.Node` alike) once per
session; the history of task j is the first optimal path of task j, never the model's own output.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wtb_local.benchmark.evaluator.ids import make_call_id
from wtb_local.benchmark.evaluator.paths import TaskGraph
from wtb_local.contract.messages import ChatMessage, ToolCall
from wtb_local.contract.schema import ASK_ACTION, PREPARE_ACTION


@dataclass(frozen=True)
class GoldNode:
    """What the loop reads from one gold node."""

    name: str
    arguments: Any
    observation: Any
    user_input: Any
    dependency_list: tuple[int, ...]

    @property
    def gold_text(self) -> str:
        """The gold arguments as the result file stores them (docs/evaluation.md §5: this json.dumps)."""
        return json.dumps(self.arguments, ensure_ascii=False)


def gold_nodes(nodes: Sequence[Any]) -> list[GoldNode]:
    """Release-format node dicts or `Node` models as `GoldNode`s."""
    result = []
    for node in nodes:
        if isinstance(node, Mapping):
            action: Any = node.get("action") or {}
            result.append(
                GoldNode(
                    name=action.get("name"),
                    arguments=action.get("arguments", {}),
                    observation=node.get("observation"),
                    user_input=node.get("user_input"),
                    dependency_list=tuple(node.get("dependency_list") or ()),
                )
            )
        else:
            result.append(
                GoldNode(
                    name=node.action.name,
                    arguments=node.action.arguments,
                    observation=node.observation,
                    user_input=node.user_input,
                    dependency_list=tuple(node.dependency_list),
                )
            )
    return result


def system_message(env_info: str) -> ChatMessage:
    return {"role": "system", "content": "Current Date: " + env_info}


def user_message(task: str) -> ChatMessage:
    return {"role": "user", "content": task}


def history_call_key(session_id: str, task_idx: int, step: int, k: int) -> str:
    """Key of the k-th history call of `step` of task `task_idx` (hashed by `make_call_id`)."""
    return f"{session_id}/{task_idx}/{step}/{k}"


def gold_path_steps(
    nodes: Sequence[GoldNode], path: Sequence[Sequence[int]]
) -> Iterator[tuple[list[ChatMessage], list[GoldNode]]]:
    """Per step of a gold path: the messages its pseudo-actions say (an ask: the question and the user's
    answer; a prepare: its text), and its tool-call nodes, in order. The one walk of a gold path that both
    the release's history (`gold_path_messages`) and the paper harness's (benchmark/protocols/history.py) format."""
    for step in path:
        said: list[ChatMessage] = []
        called: list[GoldNode] = []
        for position in step:
            node = nodes[position]
            if node.name == ASK_ACTION:
                said.append({"role": "assistant", "content": node.observation})
                said.append({"role": "user", "content": node.user_input})
            elif node.name == PREPARE_ACTION:
                said.append({"role": "assistant", "content": node.observation})
            else:
                called.append(node)
        yield said, called


def gold_path_messages(
    nodes: Sequence[GoldNode],
    path: Sequence[Sequence[int]],
    *,
    session_id: str,
    task_idx: int,
    id_style: str = "openai",
) -> list[ChatMessage]:
    """The assistant/user/tool messages replaying one gold path as history (docs/evaluation.md §3 step 2)."""
    messages: list[ChatMessage] = []
    for step_idx, (said, called) in enumerate(gold_path_steps(nodes, path)):
        messages.extend(said)
        calls: list[ToolCall] = []
        for node in called:
            arguments = node.arguments
            if isinstance(arguments, dict):
                arguments = json.dumps(arguments, ensure_ascii=False)
            call_id = make_call_id(history_call_key(session_id, task_idx, step_idx, len(calls)), id_style)
            calls.append({"type": "function", "function": {"name": node.name, "arguments": arguments}, "id": call_id})
        if calls:
            messages.append({"role": "assistant", "content": "", "tool_calls": calls})
            for call, node in zip(calls, called, strict=True):
                # Reference quirk: history observations are JSON-serialized once more (strings get quotes).
                messages.append(
                    {
                        "role": "tool",
                        "content": json.dumps(node.observation, ensure_ascii=False),
                        "tool_call_id": call["id"],
                    }
                )
    return messages


def session_prefixes(
    session_id: str,
    env_info: str,
    tasks: Sequence[str],
    nodes_per_task: Sequence[Sequence[GoldNode]],
    graphs: Sequence[TaskGraph],
    *,
    id_style: str = "openai",
) -> list[list[ChatMessage]]:
    """For each task i, the conversation sent at its first step: system, gold history of tasks < i, user i.

    The history grows once per session; each returned list is independent (fresh dicts).
    """
    history: list[ChatMessage] = [system_message(env_info)]
    prefixes: list[list[ChatMessage]] = []
    for task_idx, task in enumerate(tasks):
        prefixes.append(copy.deepcopy([*history, user_message(task)]))
        history.append(user_message(task))
        history.extend(
            gold_path_messages(
                nodes_per_task[task_idx],
                graphs[task_idx].first_optimal_path,
                session_id=session_id,
                task_idx=task_idx,
                id_style=id_style,
            )
        )
    return prefixes
