"""The oracle's replies: which gold step to answer with now, planned so the evaluator's loop finishes the
task in the fewest steps.

This is the oracle backend's half of the step loop; the evaluator (`wtb_local.benchmark.evaluator.episode`) only
judges replies. The loop compares action names only, takes the first matching candidate, and ask steps
answered in text do not narrow the paths (docs/evaluation.md §4), so the gold step to answer is chosen among those the
loop will actually take, by a small branch-and-bound search over the loop's own states.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from wtb_local.benchmark.evaluator.conversation import GoldNode
from wtb_local.benchmark.evaluator.ids import make_call_id
from wtb_local.benchmark.evaluator.paths import Step, TaskGraph
from wtb_local.contract.messages import Reply, ToolCall
from wtb_local.contract.schema import ASK_ACTION, PREPARE_ACTION, PSEUDO_ACTIONS

# Bounds the oracle's look-ahead; beyond it the shortest-path bound is trusted (never hit by real tasks).
_PLAN_BUDGET = 2000

Option = tuple[str, Step]  # ("tool" | "text", the candidate the loop takes)


def gold_path(episode: Any) -> tuple[Step, ...]:
    """The first shortest path agreeing with every step the episode took (ask steps included, so the
    oracle keeps to one path); falls back to tool steps only, then to the first optimal path."""
    accepted, asked = episode.accepted_steps, episode.asked_steps
    path = episode.graph.shortest_path({**accepted, **asked})
    if path is None:
        path = episode.graph.shortest_path(accepted)
    return path if path is not None else episode.graph.first_optimal_path


def gold_reply(episode: Any) -> Reply:
    """The reply an oracle gives to the episode's current step: the next gold step as tool calls
    (node-position order, deterministic ids) or, where a pseudo-action alone is due, its observation as
    text (normally simply the next step of `gold_path`)."""
    nodes = episode.nodes
    planned = _Planner(episode.graph, nodes).best(episode.step, episode.accepted_steps, episode.asked_steps)
    if planned is not None:
        kind, step = planned[1]
    else:
        path = gold_path(episode)
        if episode.step >= len(path):
            return {"content": "", "reasoning_content": None, "tool_calls": None}
        step = path[episode.step]
        kind = "text" if len(step) == 1 and nodes[step[0]].name in PSEUDO_ACTIONS else "tool"
    if kind == "text":
        names = [nodes[i].name for i in step]
        pseudo = ASK_ACTION if ASK_ACTION in names else PREPARE_ACTION
        text = nodes[step[names.index(pseudo)]].observation
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False)
        return {"content": text, "reasoning_content": None, "tool_calls": None}
    # A pseudo-action sharing a step with calls can only be matched as a call (names are compared).
    calls: list[ToolCall] = []
    for k, position in enumerate(sorted(step)):
        node = nodes[position]
        call_id = make_call_id(f"{episode.session_id}/{episode.task_idx}/{episode.step}/{k}", episode.id_style)
        calls.append({"id": call_id, "type": "function",
                      "function": {"name": node.name, "arguments": node.gold_text}})
    return {"content": None, "reasoning_content": None, "tool_calls": calls}


class _Planner:
    """Which reply makes the loop (names only, first match wins, asks in text do not narrow) finish in
    the fewest steps: a small branch-and-bound search over the loop's own states."""

    def __init__(self, graph: TaskGraph, nodes: Sequence[GoldNode]) -> None:
        self.graph = graph
        self.names = [node.name for node in nodes]
        self.budget = _PLAN_BUDGET

    def _options(self, step: int, accepted: dict[int, Step]) -> list[Option]:
        """Per distinct name list the first candidate (a tool reply takes it); the first candidate with
        a pseudo-action (a text reply takes it)."""
        options: list[Option] = []
        seen: set[tuple[str, ...]] = set()
        text: Option | None = None
        for candidate in self.graph.candidates(step, accepted):
            key = tuple(self.names[i] for i in candidate)  # candidates are already in name order
            if key not in seen:
                seen.add(key)
                options.append(("tool", candidate))
            if text is None and any(self.names[i] in PSEUDO_ACTIONS for i in candidate):
                text = ("text", candidate)
        if text is not None:
            options.append(text)
        return options

    def _after(
        self, option: Option, step: int, accepted: dict[int, Step], asked: dict[int, Step]
    ) -> tuple[bool, dict[int, Step], dict[int, Step]]:
        kind, candidate = option
        names = {self.names[i] for i in candidate}
        if kind == "text":
            if ASK_ACTION in names:
                return False, accepted, {**asked, step: candidate}
            return True, accepted, asked
        return PREPARE_ACTION in names, {**accepted, step: candidate}, asked

    def best(self, step: int, accepted: dict[int, Step], asked: dict[int, Step]) -> tuple[int, Option] | None:
        """(steps to the end, the option to take now), or None when the loop cannot finish correctly."""
        if step >= len(self.names):
            return None
        path = self.graph.shortest_path({**accepted, **asked})
        if path is None or len(path) <= step:
            return None
        options = self._options(step, accepted)
        wanted = path[step]
        wanted_kind = "text" if len(wanted) == 1 and self.names[wanted[0]] in PSEUDO_ACTIONS else "tool"
        preferred = [o for o in options if o[0] == wanted_kind and set(o[1]) == set(wanted)]
        ordered = preferred + [o for o in options if o not in preferred]
        best: tuple[int, Option] | None = None
        for option in ordered:
            ends, next_accepted, next_asked = self._after(option, step, accepted, asked)
            if ends:
                length: int | None = step + 1
            else:
                bound = self.graph.best_length({**next_accepted, **next_asked})
                if bound is None or (best is not None and bound >= best[0]):
                    continue
                if self.budget <= 0:
                    length = bound
                else:
                    self.budget -= 1
                    sub = self.best(step + 1, next_accepted, next_asked)
                    length = None if sub is None else sub[0]
            if length is not None and (best is None or length < best[0]):
                best = (length, option)
                if length <= len(path):
                    break  # nothing agreeing with the steps so far is shorter
        return best
